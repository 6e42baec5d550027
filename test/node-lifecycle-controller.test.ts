/**
 * Node heartbeats against the embedded API server: the kubelet's Lease (`kube-node-lease/<node>`, 40 s, owned by its
 * Node) renewed on its interval; and the node lifecycle controller, on an injected clock, marking a node whose
 * heartbeats stop for 40 s Unknown, tainting it unreachable and its pods not Ready, then untainting it when it is
 * back; a node its kubelet reports not Ready is tainted not-ready.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { NodeLifecycleController, UNREACHABLE_TAINT } from '../src/controllers/node-lifecycle-controller.js';
import type { RestartingInformer } from '../src/kube/informer.js';
import { kubeTime } from '../src/lib/kube-time.js';
import { NODE_LEASE_NAMESPACE, NodeLease } from '../src/up/node-lease.js';
import { silentLogs } from './helpers/captured-logs.js';
import { reportPods, startControllers, type ControllerFixture } from './helpers/controller-fixture.js';
import { waitFor } from './helpers/mesh-fixture.js';

const DEADLINE_MS = 10_000;
const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

describe('node heartbeats: the kubelet Lease and the node lifecycle controller', () => {
  let fx: ControllerFixture;
  let core: k8s.CoreV1Api;
  let leases: k8s.CoordinationV1Api;
  let controller: NodeLifecycleController;
  /** The controller's own cache of nodes (the factory shares one informer per resource). */
  let nodes: RestartingInformer<k8s.V1Node>;
  let clock = Date.now();

  const node = (name: string): Promise<k8s.V1Node> => core.readNode({ name });
  const ready = async (name: string): Promise<k8s.V1NodeCondition | undefined> =>
    (await node(name)).status?.conditions?.find((c) => c.type === 'Ready');
  const taints = async (name: string): Promise<string[]> =>
    ((await node(name)).spec?.taints ?? []).map((t) => `${t.key}:${t.effect}`).sort();
  /** What a kubelet posts: its Ready condition with a new heartbeat. */
  const postReady = (name: string, status: 'True' | 'False'): Promise<unknown> =>
    core.patchNodeStatus(
      {
        name,
        body: {
          status: {
            conditions: [
              {
                type: 'Ready',
                status,
                reason: 'KubeletReady',
                lastHeartbeatTime: kubeTime(clock),
                lastTransitionTime: kubeTime(),
              },
            ],
          },
        },
      },
      MERGE,
    );
  /** Posts a Ready heartbeat and waits until the controller's cache has it. */
  const heartbeat = async (name: string, status: 'True' | 'False'): Promise<void> => {
    const posted = (await postReady(name, status)) as k8s.V1Node;
    await waitFor(
      `${name}'s heartbeat cached`,
      () => nodes.get(name)?.metadata?.resourceVersion === posted.metadata?.resourceVersion,
      DEADLINE_MS,
    );
  };

  before(async () => {
    fx = await startControllers('node-lifecycle', (kc, informers, logs) => {
      nodes = informers.informerFor<k8s.V1Node>('/api/v1/nodes');
      controller = new NodeLifecycleController(kc, informers, logs.scope('nodelifecycle'), {
        monitorPeriodMs: 3_600_000,
        now: () => clock,
      });
      return [controller];
    });
    core = fx.core;
    leases = fx.kc.makeApiClient(k8s.CoordinationV1Api);
    for (const name of ['node1', 'node2']) {
      await core.createNode({ body: { metadata: { name } } });
      await postReady(name, 'True');
    }
    const pod = await core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name: 'web' }, spec: { nodeName: 'node1', containers: [{ name: 'c', image: 'web' }] } },
    });
    await reportPods(core, [pod]);
  });
  after(() => fx.stop());

  test("the kubelet's Lease: held by its node for 40 s, owned by the Node, renewed on its interval to the microsecond", async () => {
    let renewals = 0;
    const lease = new NodeLease(fx.kc, 'node1', silentLogs('kubelet').scope('kubelet'), {
      renewIntervalMs: 50,
      onRenew: () => {
        renewals++;
        return Promise.resolve();
      },
    });
    lease.start();
    try {
      await waitFor('two renewals', () => renewals >= 2, DEADLINE_MS);
    } finally {
      await lease.stop();
    }
    const l = await leases.readNamespacedLease({ name: 'node1', namespace: NODE_LEASE_NAMESPACE });
    assert.deepEqual(
      [l.spec?.holderIdentity, l.spec?.leaseDurationSeconds, l.metadata?.ownerReferences?.map((r) => [r.kind, r.name])],
      ['node1', 40, [['Node', 'node1']]],
    );
    const raw = (await fx.kc.makeApiClient(k8s.CustomObjectsApi).getNamespacedCustomObject({
      group: 'coordination.k8s.io',
      version: 'v1',
      namespace: NODE_LEASE_NAMESPACE,
      plural: 'leases',
      name: 'node1',
    })) as { spec: { renewTime: string } };
    assert.match(raw.spec.renewTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'a MicroTime');
  });

  test('a node silent for more than 40 s goes Unknown, is tainted unreachable, and its pods are marked not Ready; back, it is untainted', async () => {
    await heartbeat('node2', 'True');
    await controller.monitor();
    clock += 39_000;
    await heartbeat('node2', 'True');
    await controller.monitor();
    assert.equal((await ready('node1'))?.status, 'True', 'within the grace period');
    clock += 2_000;
    await controller.monitor();
    const r = await ready('node1');
    assert.deepEqual(
      [r?.status, r?.reason, r?.message],
      ['Unknown', 'NodeStatusUnknown', 'Kubelet stopped posting node status.'],
    );
    assert.equal((await ready('node2'))?.status, 'True', 'a node whose heartbeat went on stays Ready');
    assert.deepEqual(await taints('node1'), [`${UNREACHABLE_TAINT}:NoExecute`, `${UNREACHABLE_TAINT}:NoSchedule`]);
    const web = await core.readNamespacedPod({ name: 'web', namespace: 'default' });
    assert.equal(web.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
    await heartbeat('node1', 'True');
    await controller.monitor();
    assert.deepEqual(await taints('node1'), []);
  });

  test('a node whose kubelet reports it not Ready is tainted not-ready', async () => {
    await heartbeat('node2', 'False');
    await controller.monitor();
    assert.deepEqual(await taints('node2'), [
      'node.kubernetes.io/not-ready:NoExecute',
      'node.kubernetes.io/not-ready:NoSchedule',
    ]);
  });
});
