import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import type { RenderedObject } from './chart-helpers.js';
import type { LiveObject } from './cluster-client.js';
import type { InstallKind } from './install-kinds.js';
import { POLL_INTERVAL_MS, goDuration, notReady, waitForReady, type ClusterReader, type Clock } from './readiness.js';

/** A cluster whose objects the test sets, read by kind and name; lists filter by the first label of the selector. */
class FakeCluster implements ClusterReader {
  readonly objects = new Map<string, LiveObject>();
  served = new Set<string>();
  put(o: object): void {
    const l = o as LiveObject;
    this.objects.set(`${l.kind}/${l.metadata.name}`, l);
  }
  get(kind: InstallKind, _ns: string | undefined, name: string): Promise<LiveObject | undefined> {
    return Promise.resolve(this.objects.get(`${kind.kind}/${name}`));
  }
  list(kind: InstallKind): Promise<LiveObject[]> {
    return Promise.resolve([...this.objects.values()].filter((o) => o.kind === kind.kind));
  }
  serves(groupVersion: string, plural: string): Promise<boolean> {
    return Promise.resolve(this.served.has(`${groupVersion}/${plural}`));
  }
}

/** Time that moves only when the waiter sleeps; `onSleep` runs at each tick, as the cluster changing meanwhile. */
function fakeClock(onSleep: (now: number) => void = () => undefined): Clock & { sleeps: number[] } {
  let now = 0;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    sleep: (ms) => {
      sleeps.push(ms);
      now += ms;
      onSleep(now);
      return Promise.resolve();
    },
  };
}

const ds = (status: object, generation = 1): object => ({
  apiVersion: 'apps/v1',
  kind: 'DaemonSet',
  metadata: { name: 'ztunnel', namespace: 'istio-system', generation },
  spec: { updateStrategy: { type: 'RollingUpdate' } },
  status,
});
const rendered = (kind: string, name: string, apiVersion = 'apps/v1'): RenderedObject => ({
  apiVersion,
  kind,
  metadata: { name, namespace: kind === 'CustomResourceDefinition' ? undefined : 'istio-system' },
});
const ZTUNNEL = rendered('DaemonSet', 'ztunnel');

test('a DaemonSet is ready once observed, with every scheduled pod ready and updated; a fresh one (0 desired) is not', async () => {
  const c = new FakeCluster();
  c.put(ds({ observedGeneration: 0 }));
  assert.deepEqual(await notReady(c, [ZTUNNEL]), ['DaemonSet/istio-system/ztunnel']);
  c.put(ds({ observedGeneration: 1, desiredNumberScheduled: 0 }));
  assert.equal((await notReady(c, [ZTUNNEL])).length, 1);
  c.put(ds({ observedGeneration: 1, desiredNumberScheduled: 2, numberReady: 2, updatedNumberScheduled: 1 }));
  assert.equal((await notReady(c, [ZTUNNEL])).length, 1, 'one pod still runs the old template');
  c.put(ds({ observedGeneration: 1, desiredNumberScheduled: 2, numberReady: 2, updatedNumberScheduled: 2 }));
  assert.deepEqual(await notReady(c, [ZTUNNEL]), []);
});

test('waiting polls every 2 s, reports what it waits for, and returns once ready', async () => {
  const c = new FakeCluster();
  c.put(ds({ observedGeneration: 1, desiredNumberScheduled: 1, numberReady: 0, updatedNumberScheduled: 1 }));
  const clock = fakeClock((now) => {
    if (now >= 6000)
      c.put(ds({ observedGeneration: 1, desiredNumberScheduled: 1, numberReady: 1, updatedNumberScheduled: 1 }));
  });
  const reported: string[][] = [];
  await waitForReady(c, [ZTUNNEL], { timeoutMs: 300_000, clock, onWaiting: (ids) => reported.push([...ids]) });
  assert.deepEqual(clock.sleeps, [POLL_INTERVAL_MS, POLL_INTERVAL_MS, POLL_INTERVAL_MS]);
  assert.deepEqual(reported, Array(3).fill(['DaemonSet/istio-system/ztunnel']));
});

test('past the timeout the wait fails with INSTALL_ERR_NOT_READY naming each object, with a Deployment pod’s reason', async () => {
  const c = new FakeCluster();
  c.put(ds({ observedGeneration: 1, desiredNumberScheduled: 1, numberReady: 0, updatedNumberScheduled: 1 }));
  c.put({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'istiod',
      namespace: 'istio-system',
      uid: 'd1',
      generation: 1,
      annotations: { 'deployment.kubernetes.io/revision': '1' },
    },
    spec: { selector: { matchLabels: { app: 'istiod' } } },
    status: { observedGeneration: 1 },
  });
  c.put({
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      name: 'istiod-1',
      ownerReferences: [{ uid: 'd1' }],
      annotations: { 'deployment.kubernetes.io/revision': '1' },
    },
    status: { readyReplicas: 0 },
  });
  c.put({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'istiod-1-x' },
    status: { containerStatuses: [{ state: { waiting: { reason: 'ImagePullBackOff', message: 'no such image' } } }] },
  });
  const clock = fakeClock();
  await assert.rejects(
    waitForReady(c, [ZTUNNEL, rendered('Deployment', 'istiod')], { timeoutMs: 5000, clock }),
    (e) =>
      isMeshError(e, 'INSTALL_ERR_NOT_READY') &&
      e.message ===
        'resources not ready after 5s:\n  DaemonSet/istio-system/ztunnel\n  Deployment/istio-system/istiod (container failed to start: ImagePullBackOff: no such image)',
  );
  assert.deepEqual(clock.sleeps, [2000, 2000, 1000], 'the last sleep ends at the deadline');
});

test('a Deployment is ready when its current ReplicaSet has the replicas it wants', async () => {
  const c = new FakeCluster();
  const deployment = (observed: number) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'istiod', uid: 'd1', generation: 2, annotations: { 'deployment.kubernetes.io/revision': '2' } },
    spec: { replicas: 2, selector: { matchLabels: { app: 'istiod' } } },
    status: { observedGeneration: observed },
  });
  const rs = (revision: string, ready: number) => ({
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      name: `istiod-${revision}`,
      ownerReferences: [{ uid: 'd1' }],
      annotations: { 'deployment.kubernetes.io/revision': revision },
    },
    status: { readyReplicas: ready },
  });
  c.put(deployment(2));
  c.put(rs('1', 2));
  const istiod = [rendered('Deployment', 'istiod')];
  assert.equal((await notReady(c, istiod)).length, 1, 'the old ReplicaSet does not count');
  c.put(rs('2', 2));
  assert.deepEqual(await notReady(c, istiod), []);
  c.put(deployment(1));
  assert.equal((await notReady(c, istiod)).length, 1, 'not before the controller saw the latest generation');
});

test('a CRD is ready when Established, or, where the API reports no conditions, once its resource is served', async () => {
  const c = new FakeCluster();
  const crd = (conditions?: object[]) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'gateways.networking.istio.io' },
    spec: { group: 'networking.istio.io', names: { plural: 'gateways' }, versions: [{ name: 'v1', served: true }] },
    ...(conditions === undefined ? {} : { status: { conditions } }),
  });
  const gateways = [rendered('CustomResourceDefinition', 'gateways.networking.istio.io', 'apiextensions.k8s.io/v1')];
  c.put(crd([{ type: 'Established', status: 'False' }]));
  assert.equal((await notReady(c, gateways)).length, 1);
  c.put(crd([{ type: 'Established', status: 'True' }]));
  assert.deepEqual(await notReady(c, gateways), []);
  c.put(crd());
  assert.equal((await notReady(c, gateways)).length, 1);
  c.served.add('networking.istio.io/v1/gateways');
  assert.deepEqual(await notReady(c, gateways), []);
});

test('durations print as Go prints them, as istioctl shows --readiness-timeout', () => {
  assert.equal(goDuration(300_000), '5m0s');
  assert.equal(goDuration(90_000), '1m30s');
  assert.equal(goDuration(2000), '2s');
  assert.equal(goDuration(3_600_000), '1h0m0s');
  assert.equal(goDuration(500), '500ms');
});
