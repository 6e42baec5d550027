/**
 * The Deployment and ReplicaSet controllers against the embedded API server: Kubernetes' names, labels and
 * owner references; scaling both ways; a rolling update that keeps the old pods until the new ones are ready;
 * and garbage collection of the whole tree when the Deployment is deleted. A test "kubelet" marks pods ready
 * through `pods/status`, as a kubelet would report them.
 */
import { after, before, describe, test } from 'node:test';
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { DeploymentController, POD_TEMPLATE_HASH, REVISION } from '../src/controllers/deployment-controller.js';
import { ReplicaSetController } from '../src/controllers/replica-set-controller.js';
import { LogControl } from '../src/lib/log.js';
import { ameshCommand } from '../src/up/amesh-command.js';
import { startApiServer } from './helpers/in-process.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
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
  let dir: string;
  let api: ApiServer;
  let core: k8s.CoreV1Api;
  let apps: k8s.AppsV1Api;
  let deployments: DeploymentController;
  let replicaSets: ReplicaSetController;
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
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-controllers-'));
    api = await startApiServer(path.join(dir, 'data'));
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    apps = kc.makeApiClient(k8s.AppsV1Api);
    const logs = new LogControl({
      format: 'json',
      level: 'silent',
      component: 'controllers',
      out: new Writable({ write: (_c, _e, cb) => cb() }),
    });
    deployments = new DeploymentController(kc, logs.scope('deployment'));
    replicaSets = new ReplicaSetController(kc, logs.scope('replicaset'));
    deployments.start();
    replicaSets.start();
    await Promise.all([deployments.synced, replicaSets.synced]);
    await core.createNamespace({ body: { metadata: { name: NS } } });
  });
  after(async () => {
    await deployments.stop();
    await replicaSets.stop();
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

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

  test('a new template rolls out as revision 2; the old pods stay until the new ones are ready, then go', async () => {
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

test('`amesh controller-manager --kubeconfig` runs the controllers and the scheduler as a process and stops on SIGTERM', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-controller-manager-'));
  const api = await startApiServer(path.join(dir, 'data'));
  const { cmd, args } = ameshCommand();
  const p = spawn(cmd, [...args, 'controller-manager', '--kubeconfig', api.kubeconfigPath], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_FORMAT: 'json' },
  });
  let out = '';
  const synced = new Promise<void>((resolve, reject) => {
    p.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('"controllers synced"')) resolve();
    });
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.once('exit', (code) => reject(new Error(`exited with ${String(code)}: ${out}`)));
  });
  try {
    await synced;
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    await kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
    await kc
      .makeApiClient(k8s.AppsV1Api)
      .createNamespacedDeployment({ namespace: NS, body: deployment('amesh-echo:1', 2) });
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNode({ body: { metadata: { name: 'n1' } } });
    // Made by the controllers and placed by the scheduler, all in the one process.
    await waitFor(
      '2 pods from the process, scheduled',
      async () => {
        const pods = (await core.listNamespacedPod({ namespace: NS })).items;
        return pods.length === 2 && pods.every((p) => p.spec?.nodeName === 'n1');
      },
      DEADLINE_MS,
    );
    const exited = new Promise<number | null>((r) => p.once('exit', r));
    p.kill('SIGTERM');
    assert.equal(await exited, 0, out);
  } finally {
    p.kill('SIGKILL');
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
