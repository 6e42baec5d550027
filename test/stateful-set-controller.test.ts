/**
 * The StatefulSet controller against the embedded API server, read back through client-node and kubectl: ordinal
 * pods `<statefulset>-<n>` started one at a time (each once the one before is Running and Ready), with their
 * hostname, subdomain and labels; a failed pod made again under its name; a rolling update from the highest
 * ordinal down, stopping at the partition; scale-down keeping the lowest ordinals; Parallel starting all at once;
 * and volumeClaimTemplates refused with a Warning Event. A test "kubelet" reports pod phases through
 * `pods/status`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { CONTROLLER_REVISION_HASH } from '../src/controllers/controller-history.js';
import { POD_INDEX_LABEL, POD_NAME_LABEL, StatefulSetController } from '../src/controllers/stateful-set-controller.js';
import { reportPods, startControllers, unready, type ControllerFixture } from './helpers/controller-fixture.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { waitFor } from './helpers/mesh-fixture.js';

const NS = 'data';
const DEADLINE_MS = 10_000;
const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

describe('StatefulSet controller', () => {
  let fx: ControllerFixture;
  let api: ApiServer;
  let core: k8s.CoreV1Api;
  let apps: k8s.AppsV1Api;
  const { ok } = kubectlWith(() => api.kubeconfigPath);

  const podsOf = async (sts: string): Promise<k8s.V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: NS })).items
      .filter((p) => p.metadata?.ownerReferences?.[0]?.name === sts)
      .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  /** `name → image` of the StatefulSet's pods once it equals `want`. */
  const pods = async (sts: string, what: string, want: Record<string, string>): Promise<k8s.V1Pod[]> => {
    let got: Record<string, string> = {};
    let list: k8s.V1Pod[] = [];
    await waitFor(
      what,
      async () => {
        list = await podsOf(sts);
        got = Object.fromEntries(list.map((p) => [p.metadata?.name ?? '', p.spec?.containers[0]?.image ?? '']));
        return JSON.stringify(got) === JSON.stringify(want);
      },
      DEADLINE_MS,
    ).catch(() => assert.fail(`${what}: ${JSON.stringify(got)}`));
    return list;
  };
  const statefulSet = (
    name: string,
    replicas: number,
    extra: Partial<k8s.V1StatefulSetSpec> = {},
  ): k8s.V1StatefulSet => ({
    metadata: { name, namespace: NS },
    spec: {
      serviceName: name,
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'db', image: 'db:1' }] } },
      ...extra,
    },
  });
  const patch = (name: string, spec: object): Promise<unknown> =>
    apps.patchNamespacedStatefulSet({ name, namespace: NS, body: { spec } }, MERGE);

  before(async () => {
    fx = await startControllers('statefulsets', (kc, informers, logs) => [
      new StatefulSetController(kc, informers, logs.scope('statefulset')),
    ]);
    ({ core, apps, api } = fx);
    await core.createNamespace({ body: { metadata: { name: NS } } });
  });
  after(() => fx.stop());

  test('OrderedReady: db-0, then db-1 once db-0 is Running and Ready, then db-2; each with its hostname, subdomain and labels', async () => {
    await apps.createNamespacedStatefulSet({ namespace: NS, body: statefulSet('db', 3) });
    await reportPods(core, await pods('db', 'db-0 alone', { 'db-0': 'db:1' }));
    await reportPods(core, unready(await pods('db', 'then db-1', { 'db-0': 'db:1', 'db-1': 'db:1' })));
    const all = await pods('db', 'then db-2', { 'db-0': 'db:1', 'db-1': 'db:1', 'db-2': 'db:1' });
    await reportPods(core, unready(all));
    const db2 = all[2]!;
    assert.deepEqual(
      [
        db2.spec?.hostname,
        db2.spec?.subdomain,
        db2.metadata?.labels?.[POD_NAME_LABEL],
        db2.metadata?.labels?.[POD_INDEX_LABEL],
      ],
      ['db-2', 'db', 'db-2', '2'],
    );
    assert.match(db2.metadata?.labels?.[CONTROLLER_REVISION_HASH] ?? '', /^db-[a-z0-9]+$/);
    await waitFor(
      'status 3 ready',
      async () => (await apps.readNamespacedStatefulSet({ name: 'db', namespace: NS })).status?.readyReplicas === 3,
      DEADLINE_MS,
    );
    if (kubectlSkip === false) assert.match(await ok('get', 'sts', 'db', '-n', NS), /db\s+3\/3\s/);
  });

  test('a failed pod is made again under its name', async () => {
    const [db1] = (await podsOf('db')).filter((p) => p.metadata?.name === 'db-1');
    await reportPods(core, [db1!], 'Failed');
    await waitFor(
      'db-1 made again',
      async () =>
        (await podsOf('db')).some((p) => p.metadata?.name === 'db-1' && p.metadata.uid !== db1?.metadata?.uid),
      DEADLINE_MS,
    );
    await reportPods(core, unready(await podsOf('db')));
  });

  test('RollingUpdate replaces from the highest ordinal down and stops at the partition', async () => {
    await patch('db', {
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 1 } },
      template: { spec: { containers: [{ name: 'db', image: 'db:2' }] } },
    });
    await reportPods(core, unready(await pods('db', 'db-2 first', { 'db-0': 'db:1', 'db-1': 'db:1', 'db-2': 'db:2' })));
    await reportPods(core, unready(await pods('db', 'then db-1', { 'db-0': 'db:1', 'db-1': 'db:2', 'db-2': 'db:2' })));
    await waitFor(
      'status: 2 updated of 3',
      async () => (await apps.readNamespacedStatefulSet({ name: 'db', namespace: NS })).status?.updatedReplicas === 2,
      DEADLINE_MS,
    );
    const s = await apps.readNamespacedStatefulSet({ name: 'db', namespace: NS });
    assert.notEqual(
      s.status?.updateRevision,
      s.status?.currentRevision,
      'db-0 keeps the old revision below the partition',
    );
  });

  test('scaling down removes the ordinals above the new count, keeping the lowest', async () => {
    await patch('db', { replicas: 1 });
    await pods('db', 'db-0 left', { 'db-0': 'db:1' });
  });

  test('Parallel starts every ordinal at once', async () => {
    await apps.createNamespacedStatefulSet({
      namespace: NS,
      body: statefulSet('cache', 3, { podManagementPolicy: 'Parallel' }),
    });
    await pods('cache', 'all three at once', { 'cache-0': 'db:1', 'cache-1': 'db:1', 'cache-2': 'db:1' });
  });

  test('volumeClaimTemplates get no pod and a Warning Event that says why', async () => {
    await apps.createNamespacedStatefulSet({
      namespace: NS,
      body: statefulSet('claims', 1, {
        volumeClaimTemplates: [
          {
            metadata: { name: 'data' },
            spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
          },
        ],
      }),
    });
    let events: k8s.CoreV1Event[] = [];
    await waitFor(
      'a FailedCreate event',
      async () =>
        (events = (await core.listNamespacedEvent({ namespace: NS })).items.filter(
          (e) => e.involvedObject.name === 'claims' && e.reason === 'FailedCreate',
        )).length === 1,
      DEADLINE_MS,
    );
    assert.equal(events[0]?.type, 'Warning');
    assert.match(events[0]?.message ?? '', /volumeClaimTemplates \(data\) cannot be provisioned/);
    assert.deepEqual(await podsOf('claims'), []);
  });
});
