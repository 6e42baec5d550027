/**
 * The Deployment and ReplicaSet controllers against the embedded API server: Kubernetes' names, labels and
 * owner references; scaling both ways; a rolling update that keeps the old pods until the new ones are ready;
 * and garbage collection of the whole tree when the Deployment is deleted. A test "kubelet" marks pods ready
 * through `pods/status`, as a kubelet would report them. `amesh controller-manager` as a process: its controllers
 * share one informer per resource, and it stops on SIGTERM.
 */
import { after, before, describe, test } from 'node:test';
import { spawn, type ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { DeploymentController, POD_TEMPLATE_HASH, REVISION } from '../src/controllers/deployment-controller.js';
import { ReplicaSetController } from '../src/controllers/replica-set-controller.js';
import { ameshCommand } from '../src/up/amesh-command.js';
import { startApiServer } from './helpers/in-process.js';
import { startControllers, type ControllerFixture } from './helpers/controller-fixture.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { freePorts } from './helpers/free-port.js';
import { waitFor } from './helpers/mesh-fixture.js';

const NS = 'shop';
const DEADLINE_MS = 10_000;
const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

const deployment = (image: string, replicas: number): k8s.V1Deployment => ({
  metadata: { name: 'web', namespace: NS },
  spec: {
    replicas,
    selector: { matchLabels: { app: 'web' } },
    template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image }] } },
  },
});

describe('Deployment and ReplicaSet controllers', () => {
  let fx: ControllerFixture;
  let api: ApiServer;
  let core: k8s.CoreV1Api;
  let apps: k8s.AppsV1Api;
  const { ok } = kubectlWith(() => api.kubeconfigPath);

  const podsOf = async (): Promise<k8s.V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: NS })).items.filter((p) => p.metadata?.deletionTimestamp === undefined);
  const replicaSetsOf = async (): Promise<k8s.V1ReplicaSet[]> =>
    (await apps.listNamespacedReplicaSet({ namespace: NS })).items;
  /** What a kubelet reports once a pod's containers run and pass readiness. */
  const markReady = async (): Promise<void> => {
    for (const p of await podsOf()) {
      if (p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true) continue;
      await core.patchNamespacedPodStatus(
        {
          name: p.metadata?.name ?? '',
          namespace: NS,
          body: { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } },
        },
        MERGE,
      );
    }
  };

  before(async () => {
    fx = await startControllers('controllers', (kc, informers, logs) => [
      new DeploymentController(kc, informers, logs.scope('deployment')),
      new ReplicaSetController(kc, informers, logs.scope('replicaset')),
    ]);
    ({ core, apps, api } = fx);
    await core.createNamespace({ body: { metadata: { name: NS } } });
  });
  after(() => fx.stop());

  test('a Deployment makes a ReplicaSet <deployment>-<pod-template-hash> and its pods <replicaset>-<5 chars>, each owned by the one above', async () => {
    const d = await apps.createNamespacedDeployment({ namespace: NS, body: deployment('amesh-echo:1', 3) });
    await waitFor('3 pods', async () => (await podsOf()).length === 3, DEADLINE_MS);
    const [rs] = await replicaSetsOf();
    const hash = rs?.metadata?.labels?.[POD_TEMPLATE_HASH] ?? '';
    assert.match(hash, /^[bcdfghjklmnpqrstvwxz2456789]+$/);
    assert.equal(rs?.metadata?.name, `web-${hash}`);
    assert.equal(rs?.metadata?.annotations?.[REVISION], '1');
    assert.deepEqual(rs?.spec?.selector.matchLabels, { app: 'web', [POD_TEMPLATE_HASH]: hash });
    assert.deepEqual(
      rs?.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.uid, r.controller]),
      [['Deployment', 'web', d.metadata?.uid, true]],
    );
    for (const p of await podsOf()) {
      assert.match(p.metadata?.name ?? '', new RegExp(`^web-${hash}-[bcdfghjklmnpqrstvwxz2456789]{5}$`));
      assert.equal(p.metadata?.labels?.[POD_TEMPLATE_HASH], hash);
      assert.deepEqual(
        p.metadata?.ownerReferences?.map((r) => [r.kind, r.uid]),
        [['ReplicaSet', rs?.metadata?.uid]],
      );
    }
  });

  test('readiness reaches the ReplicaSet and Deployment status: READY 3/3 in kubectl', async () => {
    await markReady();
    await waitFor(
      '3 available',
      async () => (await apps.readNamespacedDeployment({ name: 'web', namespace: NS })).status?.availableReplicas === 3,
      DEADLINE_MS,
    );
    const d = await apps.readNamespacedDeployment({ name: 'web', namespace: NS });
    assert.equal(d.status?.conditions?.find((c) => c.type === 'Available')?.status, 'True');
    assert.equal(d.status?.conditions?.find((c) => c.type === 'Progressing')?.reason, 'NewReplicaSetAvailable');
    if (kubectlSkip === false) assert.match(await ok('get', 'deployment', 'web', '-n', NS), /web +3\/3 +3 +3/);
  });

  test('scaling down removes pods down to the new count, and scaling up adds them back', async () => {
    await apps.patchNamespacedDeployment({ name: 'web', namespace: NS, body: { spec: { replicas: 1 } } }, MERGE);
    await waitFor('1 pod left', async () => (await podsOf()).length === 1, DEADLINE_MS);
    await apps.patchNamespacedDeployment({ name: 'web', namespace: NS, body: { spec: { replicas: 2 } } }, MERGE);
    await waitFor('2 pods', async () => (await podsOf()).length === 2, DEADLINE_MS);
    await markReady();
  });

  test('a new template rolls out as revision 2, which the Deployment is annotated with; the old pods stay until the new ones are ready, then go', async () => {
    const [first] = await replicaSetsOf();
    const oldPods = new Set((await podsOf()).map((p) => p.metadata?.name));
    await apps.patchNamespacedDeployment(
      {
        name: 'web',
        namespace: NS,
        body: { spec: { template: { spec: { containers: [{ name: 'web', image: 'amesh-echo:2' }] } } } },
      },
      MERGE,
    );
    await waitFor(
      'the new ReplicaSet has its 2 pods',
      async () => (await podsOf()).filter((p) => !oldPods.has(p.metadata?.name)).length === 2,
      DEADLINE_MS,
    );
    const next = (await replicaSetsOf()).find((rs) => rs.metadata?.uid !== first?.metadata?.uid);
    assert.equal(next?.metadata?.annotations?.[REVISION], '2');
    await waitFor(
      'the Deployment annotated with its revision, as kubectl rollout and installers read it',
      async () =>
        (await apps.readNamespacedDeployment({ name: 'web', namespace: NS })).metadata?.annotations?.[REVISION] === '2',
      DEADLINE_MS,
    );
    assert.equal(
      (await podsOf()).filter((p) => oldPods.has(p.metadata?.name)).length,
      2,
      'no old pod goes before a new one is ready',
    );
    await markReady();
    await waitFor(
      'old pods gone',
      async () => (await podsOf()).every((p) => !oldPods.has(p.metadata?.name)),
      DEADLINE_MS,
    );
    const old = await apps.readNamespacedReplicaSet({ name: first?.metadata?.name ?? '', namespace: NS });
    assert.equal(old.spec?.replicas, 0, 'the old ReplicaSet is kept at zero as history');
  });

  test('deleting the Deployment takes its ReplicaSets and pods with it', async () => {
    await apps.deleteNamespacedDeployment({ name: 'web', namespace: NS });
    await waitFor(
      'everything collected',
      async () => (await replicaSetsOf()).length === 0 && (await podsOf()).length === 0,
      DEADLINE_MS,
    );
  });
});

/**
 * `amesh controller-manager` (or `amesh scheduler`) `--kubeconfig <kubeconfig>` as a process; `synced` once it logs
 * that its informers are.
 */
function controlPlaneProcess(
  kubeconfig: string,
  component: 'controller-manager' | 'scheduler' = 'controller-manager',
): { p: ChildProcess; synced: Promise<void>; output: () => string } {
  const { cmd, args } = ameshCommand();
  const p = spawn(cmd, [...args, component, '--kubeconfig', kubeconfig], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_FORMAT: 'json' },
  });
  let out = '';
  const synced = new Promise<void>((resolve, reject) => {
    p.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('"controllers synced"') || out.includes('"scheduler synced"')) resolve();
    });
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.once('exit', (code) => reject(new Error(`exited with ${String(code)}: ${out}`)));
  });
  return { p, synced, output: () => out };
}

test('`amesh controller-manager` whose API is not up yet keeps retrying its informers instead of exiting', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-controller-manager-'));
  const [port] = await freePorts('127.0.0.1', 1);
  const kubeconfig = path.join(dir, 'kubeconfig');
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'down', server: `https://127.0.0.1:${String(port)}`, skipTLSVerify: true }],
    users: [{ name: 'down', token: 'unused' }],
    contexts: [{ name: 'down', cluster: 'down', user: 'down' }],
    currentContext: 'down',
  });
  await writeFile(kubeconfig, kc.exportConfig());
  const { p, synced, output } = controlPlaneProcess(kubeconfig);
  // It cannot sync while its API is down, and its end is this test's kill.
  synced.catch(() => undefined);
  try {
    // Two failed rounds of the nodes informer: the process outlived its first retry.
    await new Promise<void>((resolve, reject) => {
      const retries = (): number =>
        output().match(/"path":"\/api\/v1\/nodes"[^\n]*watch failed; restarting/g)?.length ?? 0;
      p.stdout?.on('data', () => {
        if (retries() >= 2) resolve();
      });
      p.once('exit', (code) => reject(new Error(`exited with ${String(code)}: ${output()}`)));
    });
    assert.equal(p.exitCode, null);
  } finally {
    p.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
});

test('`amesh controller-manager` and `amesh scheduler` as processes make and place pods, and stop on SIGTERM', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-controller-manager-'));
  const api = await startApiServer(path.join(dir, 'data'));
  const { p, synced, output } = controlPlaneProcess(api.kubeconfigPath);
  const scheduler = controlPlaneProcess(api.kubeconfigPath, 'scheduler');
  try {
    await Promise.all([synced, scheduler.synced]);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    await kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
    await kc
      .makeApiClient(k8s.AppsV1Api)
      .createNamespacedDeployment({ namespace: NS, body: deployment('amesh-echo:1', 2) });
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNode({ body: { metadata: { name: 'n1' } } });
    // Made by the controllers in one process and placed by the scheduler in the other.
    await waitFor(
      '2 pods from the processes, scheduled',
      async () => {
        const pods = (await core.listNamespacedPod({ namespace: NS })).items;
        return pods.length === 2 && pods.every((p) => p.spec?.nodeName === 'n1');
      },
      DEADLINE_MS,
    );
    for (const c of [{ p, output }, scheduler]) {
      const exited = new Promise<number | null>((r) => c.p.once('exit', r));
      c.p.kill('SIGTERM');
      assert.equal(await exited, 0, c.output());
    }
  } finally {
    p.kill('SIGKILL');
    scheduler.p.kill('SIGKILL');
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

/**
 * A plain-HTTP front of `api` that records each request (`METHOD /path?query`) and passes it on with the admin
 * credentials: what a client behind it asks the API for.
 */
async function recordingFront(
  api: ApiServer,
  dir: string,
): Promise<{ kubeconfig: string; requests: string[]; close(): Promise<void> }> {
  const admin = new k8s.KubeConfig();
  admin.loadFromFile(api.kubeconfigPath);
  const authorization = `Bearer ${admin.getCurrentUser()?.token ?? ''}`;
  const target = new URL(api.url);
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method ?? ''} ${req.url ?? ''}`);
    const upstream = https.request(
      {
        ca: api.caCertPem,
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization, host: target.host },
      },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        // A watch's headers go out at once: client-node counts the watch open when they arrive.
        res.flushHeaders();
        r.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const front = new k8s.KubeConfig();
  front.loadFromOptions({
    // client-node speaks plain HTTP only when told to skip TLS verification; this front is the test's own.
    clusters: [
      { name: 'front', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true },
    ],
    users: [{ name: 'front' }],
    contexts: [{ name: 'front', cluster: 'front', user: 'front' }],
    currentContext: 'front',
  });
  const kubeconfig = path.join(dir, 'front.kubeconfig');
  await writeFile(kubeconfig, front.exportConfig());
  return {
    kubeconfig,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

test(
  '`amesh controller-manager` lists and watches each resource once: its controllers share one informer per resource',
  { timeout: 60_000 },
  async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'amesh-controller-manager-'));
    const api = await startApiServer(path.join(dir, 'data'));
    const front = await recordingFront(api, dir);
    const { p, synced } = controlPlaneProcess(front.kubeconfig);
    try {
      // Synced means every informer has listed and its watch has been answered, so all of them went through the front.
      await synced;
      const paths = (watch: boolean): string[] =>
        front.requests
          .filter((r) => r.startsWith('GET ') && /[?&]watch=true(&|$)/.test(r) === watch)
          .map((r) => r.slice('GET '.length).split('?')[0]!)
          .sort();
      const resources = [
        '/api/v1/namespaces',
        '/api/v1/nodes',
        '/api/v1/pods',
        '/api/v1/serviceaccounts',
        '/api/v1/services',
        '/apis/apps/v1/controllerrevisions',
        '/apis/apps/v1/daemonsets',
        '/apis/apps/v1/deployments',
        '/apis/apps/v1/replicasets',
        '/apis/apps/v1/statefulsets',
        '/apis/batch/v1/cronjobs',
        '/apis/batch/v1/jobs',
        '/apis/coordination.k8s.io/v1/leases',
        '/apis/discovery.k8s.io/v1/endpointslices',
      ];
      assert.deepEqual(paths(false), resources, 'lists');
      assert.deepEqual(paths(true), resources, 'watches');
    } finally {
      p.kill('SIGKILL');
      await front.close();
      await api.stop();
      await rm(dir, { recursive: true, force: true });
    }
  },
);
