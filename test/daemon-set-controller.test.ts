/**
 * The DaemonSet controller with the scheduler against the embedded API server, read back through client-node
 * and kubectl: a pod per eligible node (node selector and taints decide, with the tolerations daemon pods get),
 * bound by the scheduler through the node affinity the controller pins, Kubernetes' names, labels, revisions and
 * status counts; a node that stops matching loses its pod; a failed pod is replaced; a new template rolls out
 * one node at a time with maxUnavailable, or beside the old pod with maxSurge; deleting the DaemonSet takes its
 * pods. A test "kubelet" reports readiness through `pods/status`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { CONTROLLER_REVISION_HASH } from '../src/controllers/controller-history.js';
import { DaemonSetController } from '../src/controllers/daemon-set-controller.js';
import { Scheduler } from '../src/controllers/scheduler.js';
import { reportPods, startControllers, unready, type ControllerFixture } from './helpers/controller-fixture.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { waitFor } from './helpers/mesh-fixture.js';

const NS = 'kube-system';
const DEADLINE_MS = 10_000;
const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

describe('DaemonSet controller', () => {
  let fx: ControllerFixture;
  let api: ApiServer;
  let core: k8s.CoreV1Api;
  let apps: k8s.AppsV1Api;
  const { ok } = kubectlWith(() => api.kubeconfigPath);

  const podsOf = async (ds: string): Promise<k8s.V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: NS })).items
      .filter((p) => p.metadata?.ownerReferences?.[0]?.name === ds)
      .sort((a, b) => (a.spec?.nodeName ?? '').localeCompare(b.spec?.nodeName ?? ''));
  /** `node → image` of the DaemonSet's pods once every one is bound, when `want` holds for that map. */
  const placement = async (ds: string, what: string, want: Record<string, string[]>): Promise<k8s.V1Pod[]> => {
    let got: Record<string, string[]> = {};
    let pods: k8s.V1Pod[] = [];
    await waitFor(
      what,
      async () => {
        pods = await podsOf(ds);
        got = {};
        for (const p of pods) (got[p.spec?.nodeName || '-'] ??= []).push(p.spec?.containers[0]?.image ?? '');
        for (const images of Object.values(got)) images.sort();
        return JSON.stringify(got) === JSON.stringify(want);
      },
      DEADLINE_MS,
    ).catch(() => assert.fail(`${what}: ${JSON.stringify(got)}`));
    return pods;
  };
  const node = (name: string, labels: Record<string, string>, taints: k8s.V1Taint[] = []): Promise<unknown> =>
    core.createNode({
      body: {
        metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
        spec: { taints },
        status: { conditions: [{ type: 'Ready', status: 'True' }] },
      },
    });
  const daemonSet = (name: string, image: string, strategy: k8s.V1DaemonSetUpdateStrategy): k8s.V1DaemonSet => ({
    metadata: { name, namespace: NS },
    spec: {
      selector: { matchLabels: { app: name } },
      updateStrategy: strategy,
      template: {
        metadata: { labels: { app: name } },
        spec: { nodeSelector: { 'kubernetes.io/os': 'linux' }, containers: [{ name: 'agent', image }] },
      },
    },
  });
  const setImage = (name: string, image: string): Promise<unknown> =>
    apps.patchNamespacedDaemonSet(
      {
        name,
        namespace: NS,
        body: { spec: { template: { spec: { containers: [{ name: 'agent', image }] } } } },
      },
      MERGE,
    );

  before(async () => {
    fx = await startControllers('daemonsets', (kc, informers, logs) => [
      new DaemonSetController(kc, informers, logs.scope('daemonset')),
      new Scheduler(kc, informers, logs.scope('scheduler')),
    ]);
    ({ core, apps, api } = fx);
    await node('node1', { 'kubernetes.io/os': 'linux' });
    await node('node2', { 'kubernetes.io/os': 'linux' });
    await node('win1', { 'kubernetes.io/os': 'windows' });
    await node('infra1', { 'kubernetes.io/os': 'linux' }, [{ key: 'dedicated', value: 'infra', effect: 'NoSchedule' }]);
  });
  after(() => fx.stop());

  test('one pod <daemonset>-<suffix> per node its selector and tolerations allow, pinned by node affinity and bound there; status counts the ready ones', async () => {
    const ds = await apps.createNamespacedDaemonSet({
      namespace: NS,
      body: daemonSet('agent', 'agent:1', { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } }),
    });
    const pods = await placement('agent', 'a pod on node1 and node2', { node1: ['agent:1'], node2: ['agent:1'] });
    const revisions = (await apps.listNamespacedControllerRevision({ namespace: NS })).items;
    assert.deepEqual(
      revisions.map((r) => [r.metadata?.name, r.revision, r.metadata?.ownerReferences?.[0]?.uid]),
      [[`agent-${pods[0]?.metadata?.labels?.[CONTROLLER_REVISION_HASH] ?? ''}`, 1, ds.metadata?.uid]],
    );
    for (const p of pods) {
      assert.match(p.metadata?.name ?? '', /^agent-[a-z0-9]{5}$/);
      assert.equal(p.metadata?.labels?.['pod-template-generation'], '1');
      assert.deepEqual(
        p.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms?.[0]
          ?.matchFields?.[0]?.values,
        [p.spec?.nodeName],
      );
      assert.ok(
        p.spec?.tolerations?.some((t) => t.key === 'node.kubernetes.io/unschedulable' && t.effect === 'NoSchedule'),
        'daemon pods tolerate a cordoned node',
      );
    }
    await reportPods(core, pods);
    await waitFor(
      'status 2/2 ready',
      async () => {
        const s = (await apps.readNamespacedDaemonSet({ name: 'agent', namespace: NS })).status;
        return s?.desiredNumberScheduled === 2 && s.numberReady === 2 && s.updatedNumberScheduled === 2;
      },
      DEADLINE_MS,
    );
    if (kubectlSkip === false)
      assert.match(await ok('get', 'ds', 'agent', '-n', NS), /agent\s+2\s+2\s+2\s+2\s+2\s+kubernetes\.io\/os=linux\s/);
  });

  test('a node that stops matching loses its pod; a tolerating DaemonSet reaches the tainted node; a failed pod is replaced', async () => {
    await core.patchNode({ name: 'node2', body: { metadata: { labels: { 'kubernetes.io/os': 'plan9' } } } }, MERGE);
    await placement('agent', 'only node1 keeps a pod', { node1: ['agent:1'] });
    await core.patchNode({ name: 'node2', body: { metadata: { labels: { 'kubernetes.io/os': 'linux' } } } }, MERGE);
    await reportPods(core, unready(await placement('agent', 'node2 back', { node1: ['agent:1'], node2: ['agent:1'] })));
    await apps.patchNamespacedDaemonSet(
      {
        name: 'agent',
        namespace: NS,
        body: { spec: { updateStrategy: { type: 'OnDelete', rollingUpdate: null } } },
      },
      MERGE,
    );
    const [first] = await podsOf('agent');
    await reportPods(core, [first!], 'Failed');
    await waitFor(
      'the failed pod deleted',
      async () => !(await podsOf('agent')).some((p) => p.metadata?.uid === first?.metadata?.uid),
      DEADLINE_MS,
    );
    await reportPods(
      core,
      unready(await placement('agent', 'and replaced', { node1: ['agent:1'], node2: ['agent:1'] })),
    );
  });

  test('RollingUpdate with maxUnavailable 1 replaces one node at a time and keeps the old revision', async () => {
    await apps.patchNamespacedDaemonSet(
      { name: 'agent', namespace: NS, body: { spec: { updateStrategy: { type: 'RollingUpdate' } } } },
      MERGE,
    );
    await setImage('agent', 'agent:2');
    // Nodes are taken in name order: node1 first, and node2 only once node1's new pod is ready.
    const step = await placement('agent', 'one node at a time', { node1: ['agent:2'], node2: ['agent:1'] });
    await reportPods(core, unready(step));
    await reportPods(
      core,
      unready(await placement('agent', 'both updated', { node1: ['agent:2'], node2: ['agent:2'] })),
    );
    const revisions = (await apps.listNamespacedControllerRevision({ namespace: NS })).items.map((r) => r.revision);
    assert.deepEqual(revisions.sort(), [1, 2]);
  });

  test('RollingUpdate with maxSurge starts the new pod beside the old one and removes the old one once the new is ready', async () => {
    await apps.patchNamespacedDaemonSet(
      {
        name: 'agent',
        namespace: NS,
        body: { spec: { updateStrategy: { rollingUpdate: { maxUnavailable: 0, maxSurge: 2 } } } },
      },
      MERGE,
    );
    await setImage('agent', 'agent:3');
    const both = await placement('agent', 'new pods beside the old', {
      node1: ['agent:2', 'agent:3'],
      node2: ['agent:2', 'agent:3'],
    });
    await reportPods(core, unready(both));
    await placement('agent', 'old pods gone once the new are ready', { node1: ['agent:3'], node2: ['agent:3'] });
  });

  test('a DaemonSet that tolerates the taint runs there too; deleting it takes its pods', async () => {
    const body = daemonSet('infra', 'infra:1', { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } });
    body.spec!.template.spec!.tolerations = [
      { key: 'dedicated', operator: 'Equal', value: 'infra', effect: 'NoSchedule' },
    ];
    await apps.createNamespacedDaemonSet({ namespace: NS, body });
    await placement('infra', 'on every linux node, the tainted one too', {
      infra1: ['infra:1'],
      node1: ['infra:1'],
      node2: ['infra:1'],
    });
    await apps.deleteNamespacedDaemonSet({ name: 'infra', namespace: NS });
    await placement('infra', 'pods collected', {});
  });
});
