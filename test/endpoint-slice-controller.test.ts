/**
 * The EndpointSlice controller against the embedded API server, read back as kubectl and client-node see it: the
 * slice a Service with a selector gets (names, labels, owner, ports resolved on the pods), Kubernetes' ready,
 * serving and terminating conditions as pods become ready and are deleted, pods leaving by label, the placeholder
 * of a Service with no pods, none for a Service without a selector (whose slices, as default/kubernetes's, are left
 * alone), a slice deleted by hand coming back, and the slices going with their Service. A test "kubelet" reports pod IPs and readiness through `pods/status`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import {
  CONTROLLER_NAME,
  EndpointSliceController,
  MANAGED_BY_LABEL,
  SERVICE_NAME_LABEL,
} from '../src/controllers/endpoint-slice-controller.js';
import { startControllers, type ControllerFixture } from './helpers/controller-fixture.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { waitFor } from './helpers/mesh-fixture.js';

const NS = 'shop';
const DEADLINE_MS = 10_000;
const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
/** Holds a deleted pod in Terminating, as a pod with a running grace period would be. */
const HOLD = 'amesh.test/hold';

describe('EndpointSlice controller', () => {
  let fx: ControllerFixture;
  let api: ApiServer;
  let core: k8s.CoreV1Api;
  let discovery: k8s.DiscoveryV1Api;
  const { ok } = kubectlWith(() => api.kubeconfigPath);

  const slicesOf = async (service: string): Promise<k8s.V1EndpointSlice[]> =>
    (
      await discovery.listNamespacedEndpointSlice({
        namespace: NS,
        labelSelector: `${SERVICE_NAME_LABEL}=${service}`,
      })
    ).items;
  /** The one slice of `service` once `check` holds for it. */
  const sliceWhen = async (
    service: string,
    what: string,
    check: (s: k8s.V1EndpointSlice) => boolean,
  ): Promise<k8s.V1EndpointSlice> => {
    let last: k8s.V1EndpointSlice[] = [];
    await waitFor(
      what,
      async () => (last = await slicesOf(service)).length === 1 && check(last[0]!),
      DEADLINE_MS,
    ).catch(() => assert.fail(`${what}: ${JSON.stringify(last)}`));
    return last[0]!;
  };
  /** client-node's model objects as the plain JSON they came from. */
  const plain = (x: unknown): unknown => JSON.parse(JSON.stringify(x)) as unknown;
  const conditions = (s: k8s.V1EndpointSlice): Record<string, unknown> =>
    Object.fromEntries(
      (s.endpoints ?? []).map((e): [string, unknown] => [e.targetRef?.name ?? '', plain(e.conditions)]),
    );
  /** A running pod at `ip`, Ready or not, as a kubelet reports it. */
  const pod = async (name: string, ip: string, labels: Record<string, string>, ready: boolean): Promise<void> => {
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name, labels, finalizers: [HOLD] },
        spec: {
          nodeName: 'node1',
          containers: [{ name: 'c', image: 'echo', ports: [{ name: 'http', containerPort: 8080 }] }],
        },
      },
    });
    await setReady(name, ip, ready);
  };
  const setReady = async (name: string, ip: string, ready: boolean): Promise<void> => {
    await core.patchNamespacedPodStatus(
      {
        name,
        namespace: NS,
        body: {
          status: {
            phase: 'Running',
            podIP: ip,
            podIPs: [{ ip }],
            conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
          },
        },
      },
      MERGE,
    );
  };
  const release = (name: string): Promise<unknown> =>
    core.patchNamespacedPod({ name, namespace: NS, body: { metadata: { finalizers: null } } }, MERGE);

  before(async () => {
    fx = await startControllers('endpointslices', (kc, informers, logs) => [
      new EndpointSliceController(kc, informers, logs.scope('endpointslice')),
    ]);
    ({ core, api } = fx);
    discovery = fx.kc.makeApiClient(k8s.DiscoveryV1Api);
    await core.createNamespace({ body: { metadata: { name: NS } } });
  });
  after(() => fx.stop());

  test('a Service with a selector gets one slice <service>-<suffix>, labelled, owned by it, listing its pods with ports resolved on them', async () => {
    const svc = await core.createNamespacedService({
      namespace: NS,
      body: {
        metadata: { name: 'web', labels: { team: 'a' } },
        spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
      },
    });
    await pod('web-a', '10.1.0.1', { app: 'web' }, true);
    await pod('web-b', '10.1.0.2', { app: 'web' }, false);
    await pod('db-a', '10.1.0.3', { app: 'db' }, true);
    const s = await sliceWhen('web', 'two endpoints', (x) => x.endpoints?.length === 2);
    assert.match(s.metadata?.name ?? '', /^web-[a-z0-9]{5}$/);
    assert.deepEqual(s.metadata?.labels, {
      team: 'a',
      [SERVICE_NAME_LABEL]: 'web',
      [MANAGED_BY_LABEL]: CONTROLLER_NAME,
    });
    assert.deepEqual(
      s.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.uid, r.controller]),
      [['Service', 'web', svc.metadata?.uid, true]],
    );
    assert.equal(s.addressType, 'IPv4');
    assert.deepEqual(plain(s.ports), [{ name: 'http', port: 8080, protocol: 'TCP' }]);
    assert.deepEqual(
      s.endpoints?.map((e) => [e.addresses, e.nodeName, e.targetRef?.kind, e.targetRef?.name]),
      [
        [['10.1.0.1'], 'node1', 'Pod', 'web-a'],
        [['10.1.0.2'], 'node1', 'Pod', 'web-b'],
      ],
    );
    assert.deepEqual(conditions(s), {
      'web-a': { ready: true, serving: true, terminating: false },
      'web-b': { ready: false, serving: false, terminating: false },
    });
    if (kubectlSkip === false)
      assert.match(await ok('get', 'endpointslices', '-n', NS), /web-[a-z0-9]{5} +IPv4 +8080 +10\.1\.0\.1,10\.1\.0\.2/);
  });

  test('a pod that becomes ready is ready and serving; a deleted pod is terminating (serving while Ready, never ready) until it is gone', async () => {
    await setReady('web-b', '10.1.0.2', true);
    await sliceWhen('web', 'web-b ready', (s) => (conditions(s)['web-b'] as { ready?: boolean })?.ready === true);
    await core.deleteNamespacedPod({ name: 'web-a', namespace: NS });
    await sliceWhen(
      'web',
      'web-a terminating',
      (s) => ((conditions(s)['web-a'] as { terminating?: boolean }) ?? {}).terminating === true,
    ).then((s) =>
      assert.deepEqual(conditions(s)['web-a'], { ready: false, serving: true, terminating: true }, 'still serving'),
    );
    await release('web-a');
    await sliceWhen('web', 'web-a gone', (s) => s.endpoints?.map((e) => e.targetRef?.name).join() === 'web-b');
  });

  test('relabelling a pod moves it from one Service to the other', async () => {
    await core.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'db' }, spec: { selector: { app: 'db' }, ports: [{ port: 5432 }] } },
    });
    await sliceWhen('db', 'db-a in db', (s) => s.endpoints?.map((e) => e.targetRef?.name).join() === 'db-a');
    await core.patchNamespacedPod(
      { name: 'web-b', namespace: NS, body: { metadata: { labels: { app: 'db' } } } },
      MERGE,
    );
    await sliceWhen('db', 'web-b joins db', (s) => s.endpoints?.length === 2);
    await sliceWhen('web', 'web left empty', (s) => (s.endpoints ?? []).length === 0);
  });

  test('a Service that selects no pod keeps one empty placeholder slice; one without a selector, or ExternalName, gets none', async () => {
    await core.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'none' }, spec: { selector: { app: 'nothing' }, ports: [{ port: 80 }] } },
    });
    const placeholder = await sliceWhen('none', 'a placeholder', () => true);
    assert.deepEqual(plain([placeholder.endpoints ?? [], placeholder.ports ?? []]), [[], []]);
    await core.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'manual' }, spec: { ports: [{ port: 80 }] } },
    });
    await core.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'ext' }, spec: { type: 'ExternalName', externalName: 'example.com' } },
    });
    // The controller works through its queue in order: once a later Service has its slice, these two were seen.
    await core.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'later' }, spec: { selector: { app: 'db' }, ports: [{ port: 5432 }] } },
    });
    await sliceWhen('later', 'the later Service has its slice', (s) => s.endpoints?.length === 2);
    assert.deepEqual([...(await slicesOf('manual')), ...(await slicesOf('ext'))], []);
    const apiSlice = await discovery.readNamespacedEndpointSlice({ name: 'kubernetes', namespace: 'default' });
    assert.equal(apiSlice.endpoints?.length, 1, "the API server's own slice for default/kubernetes is left alone");
  });

  test('a managed slice deleted by hand comes back; deleting the Service takes its slices with it', async () => {
    const [before_] = await slicesOf('db');
    await discovery.deleteNamespacedEndpointSlice({ name: before_?.metadata?.name ?? '', namespace: NS });
    const again = await sliceWhen(
      'db',
      'a new slice for db',
      (s) => s.metadata?.uid !== before_?.metadata?.uid && s.endpoints?.length === 2,
    );
    assert.notEqual(again.metadata?.name, before_?.metadata?.name);
    await core.deleteNamespacedService({ name: 'db', namespace: NS });
    await waitFor('db slices collected', async () => (await slicesOf('db')).length === 0, DEADLINE_MS);
  });
});
