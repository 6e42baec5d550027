/**
 * The scheduler and the `pods/binding` subresource against the embedded API server: placement by node selector,
 * taints and load; an unschedulable pod waiting for a node to change; and binding's own refusals.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { Scheduler } from '../src/controllers/scheduler.js';
import { SharedInformerFactory } from '../src/kube/shared-informer-factory.js';
import { startApiServer } from './helpers/in-process.js';
import { waitFor } from './helpers/mesh-fixture.js';
import { silentLogs } from './helpers/captured-logs.js';
import { DeletedPodConfirmer } from './helpers/deleted-pod-confirmer.js';

const NS = 'sched';
const DEADLINE_MS = 10_000;
const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

const pod = (name: string, spec: Partial<k8s.V1PodSpec> = {}): k8s.V1Pod => ({
  metadata: { name },
  spec: { containers: [{ name: 'c', image: 'amesh-echo' }], ...spec },
});

describe('scheduler and pods/binding', () => {
  let dir: string;
  let api: ApiServer;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let scheduler: Scheduler;
  let informers: SharedInformerFactory;
  let confirmer: DeletedPodConfirmer;

  const nodeOf = async (name: string): Promise<string | undefined> =>
    (await core.readNamespacedPod({ name, namespace: NS })).spec?.nodeName;
  const scheduled = (name: string): Promise<number> =>
    waitFor(`${name} scheduled`, async () => (await nodeOf(name)) !== undefined, DEADLINE_MS);

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-scheduler-'));
    api = await startApiServer(path.join(dir, 'data'));
    kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: NS } } });
    await core.createNode({ body: { metadata: { name: 'n1', labels: { zone: 'a' } } } });
    await core.createNode({ body: { metadata: { name: 'n2', labels: { zone: 'b' } } } });
    await core.createNode({
      body: {
        metadata: { name: 'tainted' },
        spec: { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
      },
    });
    const logs = silentLogs('scheduler');
    informers = new SharedInformerFactory(kc, logs.scope('informers'));
    scheduler = new Scheduler(kc, informers, logs.scope('scheduler'));
    confirmer = new DeletedPodConfirmer(kc, logs.scope('kubelet'));
    scheduler.start();
    informers.start();
    await Promise.all([scheduler.synced, confirmer.start()]);
  });
  after(async () => {
    scheduler.stop();
    await confirmer.stop();
    await informers.stop();
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a pod goes to a node with every label of its nodeSelector, with PodScheduled=True', async () => {
    await core.createNamespacedPod({ namespace: NS, body: pod('zoned', { nodeSelector: { zone: 'b' } }) });
    await scheduled('zoned');
    const p = await core.readNamespacedPod({ name: 'zoned', namespace: NS });
    assert.equal(p.spec?.nodeName, 'n2');
    assert.equal(p.status?.conditions?.find((c) => c.type === 'PodScheduled')?.status, 'True');
  });

  test('pods spread to the node with the fewest, and never to a node whose NoSchedule taint they do not tolerate', async () => {
    for (const name of ['s1', 's2', 's3']) {
      await core.createNamespacedPod({ namespace: NS, body: pod(name) });
      await scheduled(name);
    }
    const placed = await Promise.all(['zoned', 's1', 's2', 's3'].map(nodeOf));
    assert.deepEqual(placed.filter((n) => n === 'n1').length, 2);
    assert.deepEqual(placed.filter((n) => n === 'n2').length, 2);
    await core.createNamespacedPod({
      namespace: NS,
      body: pod('tolerant', {
        nodeSelector: { 'kubernetes.io/hostname': 'tainted' },
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }],
      }),
    });
    await core.patchNode(
      { name: 'tainted', body: { metadata: { labels: { 'kubernetes.io/hostname': 'tainted' } } } },
      MERGE,
    );
    await scheduled('tolerant');
    assert.equal(await nodeOf('tolerant'), 'tainted');
  });

  test("a controller's pods spread over the nodes before the nodes' other pods count: two replicas go to both nodes though one holds more pods", async () => {
    // n1 holds three more pods than n2 (the control plane's static pods, say), all pinned there.
    for (const name of ['busy1', 'busy2', 'busy3']) {
      await core.createNamespacedPod({ namespace: NS, body: pod(name, { nodeSelector: { zone: 'a' } }) });
      await scheduled(name);
    }
    // A ReplicaSet no controller runs here: only its pods' owner references count.
    const rs = await kc.makeApiClient(k8s.AppsV1Api).createNamespacedReplicaSet({
      namespace: NS,
      body: {
        metadata: { name: 'web-1' },
        spec: {
          replicas: 0,
          selector: { matchLabels: { app: 'web' } },
          template: { metadata: { labels: { app: 'web' } }, spec: pod('t').spec! },
        },
      },
    });
    const owner = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      name: 'web-1',
      uid: rs.metadata!.uid!,
      controller: true,
    };
    for (const name of ['web-1-a', 'web-1-b']) {
      await core.createNamespacedPod({
        namespace: NS,
        body: {
          metadata: { name, ownerReferences: [owner] },
          spec: pod(name, { nodeSelector: { 'sched-test': 'spread' } }).spec!,
        },
      });
    }
    for (const n of ['n1', 'n2'])
      await core.patchNode({ name: n, body: { metadata: { labels: { 'sched-test': 'spread' } } } }, MERGE);
    await Promise.all([scheduled('web-1-a'), scheduled('web-1-b')]);
    assert.deepEqual((await Promise.all(['web-1-a', 'web-1-b'].map(nodeOf))).sort(), ['n1', 'n2']);
  });

  test('a pod that fits nowhere is Unschedulable with the reasons, and is placed once a node changes to fit', async () => {
    await core.createNamespacedPod({ namespace: NS, body: pod('waiting', { nodeSelector: { zone: 'c' } }) });
    await waitFor(
      'Unschedulable',
      async () =>
        (await core.readNamespacedPod({ name: 'waiting', namespace: NS })).status?.conditions?.some(
          (c) => c.reason === 'Unschedulable',
        ) === true,
      DEADLINE_MS,
    );
    const c = (await core.readNamespacedPod({ name: 'waiting', namespace: NS })).status?.conditions?.find(
      (x) => x.type === 'PodScheduled',
    );
    assert.equal(c?.status, 'False');
    assert.equal(c?.message, "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.");
    await core.patchNode({ name: 'n1', body: { metadata: { labels: { zone: 'c' } } } }, MERGE);
    await scheduled('waiting');
    assert.equal(await nodeOf('waiting'), 'n1');
  });

  test('a host port taken on every node it may use leaves a pod Unschedulable with a FailedScheduling Event; the port freed, it is placed', async () => {
    const withPort = (name: string, node: string): k8s.V1Pod =>
      pod(name, {
        nodeSelector: { 'kubernetes.io/hostname': node },
        containers: [{ name: 'c', image: 'amesh', ports: [{ containerPort: 8080, hostPort: 9443 }] }],
      });
    await core.patchNode({ name: 'n2', body: { metadata: { labels: { 'kubernetes.io/hostname': 'n2' } } } }, MERGE);
    await core.createNamespacedPod({ namespace: NS, body: withPort('port-a', 'n2') });
    await scheduled('port-a');
    await core.createNamespacedPod({ namespace: NS, body: withPort('port-b', 'n2') });
    const message =
      "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 2 node(s) didn't match Pod's node affinity/selector.";
    await waitFor(
      'a FailedScheduling Event naming the ports',
      async () =>
        (await core.listNamespacedEvent({ namespace: NS, fieldSelector: 'involvedObject.name=port-b' })).items.some(
          (e) => e.reason === 'FailedScheduling' && e.type === 'Warning' && e.message === message,
        ),
      DEADLINE_MS,
    );
    await core.deleteNamespacedPod({ name: 'port-a', namespace: NS });
    await scheduled('port-b');
    assert.equal(await nodeOf('port-b'), 'n2');
  });

  test('pods/binding refuses a pod already bound (409), a Binding for another pod (400) and a target that is not a Node (422)', async () => {
    const bind = (name: string, body: k8s.V1Binding): Promise<unknown> =>
      core.createNamespacedPodBinding({ name, namespace: NS, body });
    const code = (e: unknown): number | undefined => (e as { code?: number }).code;
    await assert.rejects(
      bind('zoned', { metadata: { name: 'zoned' }, target: { kind: 'Node', name: 'n1' } }),
      (e) => code(e) === 409,
    );
    await assert.rejects(
      bind('zoned', { metadata: { name: 'other' }, target: { kind: 'Node', name: 'n1' } }),
      (e) => code(e) === 400,
    );
    await assert.rejects(
      bind('zoned', { metadata: { name: 'zoned' }, target: { kind: 'Pod', name: 'n1' } }),
      (e) => code(e) === 422,
    );
    assert.equal(await nodeOf('zoned'), 'n2', 'unchanged');
  });
});
