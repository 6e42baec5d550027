import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { ProxyState } from './proxy-state.js';
import type { LocalWorkload } from './local-config.js';
import type { Authorization } from './policy.js';
import type { Service } from './service.js';
import type { Workload } from './workload.js';
import type { StateChange } from './state-change.js';

const SVC = 'backend/echo.backend.svc.cluster.local';

function wl(uid: string, o: Partial<Workload> = {}, services: LocalWorkload['services'] = {}): LocalWorkload {
  const workload: Workload = {
    uid,
    workloadIps: ['127.75.10.1'],
    protocol: 'HBONE',
    networkMode: 'Standard',
    name: uid,
    namespace: 'backend',
    trustDomain: 'cluster.local',
    serviceAccount: 'echo',
    network: '',
    workloadName: 'echo',
    workloadType: 'pod',
    canonicalName: 'echo',
    canonicalRevision: 'latest',
    hostname: '',
    node: 'n1',
    nativeTunnel: false,
    authorizationPolicies: [],
    status: 'Healthy',
    clusterId: 'Kubernetes',
    services: Object.keys(services),
    capacity: 1,
    ...o,
  };
  return { workload, services };
}

function svc(o: Partial<Service> = {}): Service {
  return {
    name: 'echo',
    namespace: 'backend',
    hostname: 'echo.backend.svc.cluster.local',
    vips: ['/10.96.75.1'],
    ports: { '80': 8080 },
    endpoints: {},
    subjectAltNames: [],
    canonical: true,
    visibility: 'Public',
    ...o,
  };
}

function policy(name: string, o: Partial<Authorization> = {}): Authorization {
  return { name, namespace: 'backend', scope: 'Namespace', action: 'Deny', rules: [[]], dryRun: false, ...o };
}

test('a workload whose IP changes is no longer found by its old IP, and one that moves node leaves the old node', () => {
  const s = new ProxyState();
  s.update({ workloads: [wl('u1')] });
  s.update({ workloads: [wl('u1', { workloadIps: ['127.75.10.2'], node: 'n2' })] });
  assert.equal(s.workloadByAddr('', '127.75.10.1'), undefined);
  assert.equal(s.workloadByAddr('', '127.75.10.2')?.uid, 'u1');
  assert.deepEqual(s.workloadsOnNode('n1'), []);
  assert.deepEqual(
    s.workloadsOnNode('n2').map((w) => w.uid),
    ['u1'],
  );
  s.update({ removedWorkloads: ['u1'] });
  assert.equal(s.workloadByAddr('', '127.75.10.2'), undefined);
  assert.equal(s.workloadByUid('u1'), undefined);
  assert.deepEqual(s.workloadsOnNode('n2'), []);
});

test('two workloads on one address: the Pod is preferred, and removing one leaves the other found there', () => {
  const s = new ProxyState();
  s.update({
    workloads: [wl('Kubernetes//Pod/backend/echo-0'), wl('Kubernetes/networking.istio.io/WorkloadEntry/backend/vm')],
  });
  assert.equal(s.workloadByAddr('', '127.75.10.1')?.uid, 'Kubernetes//Pod/backend/echo-0');
  s.update({ removedWorkloads: ['Kubernetes//Pod/backend/echo-0'] });
  assert.equal(s.workloadByAddr('', '127.75.10.1')?.uid, 'Kubernetes/networking.istio.io/WorkloadEntry/backend/vm');
});

test('a host-network pod is not found by its IP, which its node shares, only by its uid', () => {
  const s = new ProxyState();
  const node = '127.75.10.9';
  s.update({
    workloads: [
      wl('Kubernetes//Pod/kube-system/agent', { workloadIps: [node], networkMode: 'HostNetwork' }),
      wl('Kubernetes/networking.istio.io/WorkloadEntry/backend/vm', { workloadIps: [node], protocol: 'TCP' }),
    ],
  });
  assert.equal(s.workloadByAddr('', node)?.uid, 'Kubernetes/networking.istio.io/WorkloadEntry/backend/vm');
  assert.equal(s.workloadByUid('Kubernetes//Pod/kube-system/agent')?.networkMode, 'HostNetwork');
  s.update({ removedWorkloads: ['Kubernetes/networking.istio.io/WorkloadEntry/backend/vm'] });
  assert.equal(s.workloadByAddr('', node), undefined);
  s.update({ workloads: [wl('Kubernetes//Pod/kube-system/agent', { workloadIps: [node] })] });
  assert.equal(s.workloadByAddr('', node)?.uid, 'Kubernetes//Pod/kube-system/agent', 'the same pod off host network');
  s.update({ removedWorkloads: ['Kubernetes//Pod/kube-system/agent'] });
  assert.equal(s.workloadByAddr('', node), undefined);
});

test('a VIP removed from a service no longer finds it; a removed service leaves its VIPs and hostname', () => {
  const s = new ProxyState();
  s.update({ services: [svc({ vips: ['/10.96.75.1', '/10.96.75.2'] })] });
  s.update({ services: [svc({ vips: ['/10.96.75.2'] })] });
  assert.equal(s.serviceByVip('', '10.96.75.1', 'backend'), undefined);
  assert.equal(s.serviceByVip('', '10.96.75.2', 'backend')?.name, 'echo');
  s.update({ removedServices: [SVC] });
  assert.equal(s.serviceByVip('', '10.96.75.2', 'backend'), undefined);
  assert.equal(s.serviceByHostname('echo.backend.svc.cluster.local', 'backend'), undefined);
  assert.equal(s.serviceByKey(SVC), undefined);
});

test('one VIP shared by services of two namespaces: removing one keeps the other at the VIP', () => {
  const s = new ProxyState();
  s.update({ services: [svc(), svc({ namespace: 'other', canonical: false })] });
  assert.equal(s.serviceByVip('', '10.96.75.1', 'other')?.namespace, 'other');
  s.update({ removedServices: ['other/echo.backend.svc.cluster.local'] });
  assert.equal(s.serviceByVip('', '10.96.75.1', 'other')?.namespace, 'backend');
});

test('endpoints of a service not yet known are staged, attach when it arrives, follow their workload and leave with it', () => {
  const s = new ProxyState();
  s.update({ workloads: [wl('u1', {}, { [SVC]: { '80': 8080 } })] });
  assert.deepEqual(Object.keys(s.dump().stagedServices), [SVC]);
  s.update({ services: [svc()] });
  assert.deepEqual(s.dump().stagedServices, {});
  assert.deepEqual(s.serviceByKey(SVC)?.endpoints, {
    u1: { workloadUid: 'u1', port: { '80': 8080 }, status: 'Healthy' },
  });
  assert.equal(
    s.serviceByVip('', '10.96.75.1', 'backend')?.endpoints['u1']?.workloadUid,
    'u1',
    'the VIP index holds the service with its endpoints',
  );
  // The workload turns unhealthy and backs another service too: the endpoint follows.
  s.update({
    workloads: [
      wl(
        'u1',
        { status: 'Unhealthy' },
        { [SVC]: { '80': 9090 }, 'backend/other.backend.svc.cluster.local': { '81': 8081 } },
      ),
    ],
  });
  assert.deepEqual(s.serviceByKey(SVC)?.endpoints['u1'], {
    workloadUid: 'u1',
    port: { '80': 9090 },
    status: 'Unhealthy',
  });
  assert.deepEqual(Object.keys(s.dump().stagedServices), ['backend/other.backend.svc.cluster.local']);
  // It stops backing the service, then comes back and leaves for good.
  s.update({ workloads: [wl('u1')] });
  assert.deepEqual(s.serviceByKey(SVC)?.endpoints, {});
  assert.deepEqual(s.dump().stagedServices, {});
  s.update({ workloads: [wl('u1', {}, { [SVC]: { '80': 8080 } })] });
  s.update({ removedWorkloads: ['u1'] });
  assert.deepEqual(s.serviceByKey(SVC)?.endpoints, {});
});

test("a removed service keeps its workloads' endpoints staged, and a service defined again finds them", () => {
  const s = new ProxyState();
  s.update({ workloads: [wl('u1', {}, { [SVC]: { '80': 8080 } })], services: [svc()] });
  s.update({ removedServices: [SVC] });
  assert.deepEqual(Object.keys(s.dump().stagedServices[SVC] ?? {}), ['u1']);
  s.update({ services: [svc()] });
  assert.deepEqual(Object.keys(s.serviceByKey(SVC)?.endpoints ?? {}), ['u1']);
});

test('a policy whose scope changes leaves its namespace; a removed policy no longer applies', () => {
  const s = new ProxyState();
  const w = wl('u1').workload;
  s.update({ policies: [policy('p'), policy('g', { namespace: 'istio-system', scope: 'Global' })] });
  assert.deepEqual(
    s.policiesFor(w).map((p) => p.name),
    ['p', 'g'],
  );
  s.update({ policies: [policy('p', { scope: 'WorkloadSelector' })] });
  assert.deepEqual(
    s.policiesFor(w).map((p) => p.name),
    ['g'],
  );
  assert.deepEqual(
    s.policiesFor({ ...w, authorizationPolicies: ['backend/p'] }).map((p) => p.name),
    ['g', 'p'],
  );
  s.update({ removedPolicies: ['istio-system/g'] });
  assert.deepEqual(s.policiesFor(w), []);
});

test('the change event says what changed, and an update identical to what is held is no change at all', async () => {
  const s = new ProxyState();
  const seen = once(s, 'change') as Promise<[StateChange]>;
  s.update({ workloads: [wl('u1', {}, { [SVC]: { '80': 8080 } })], policies: [policy('p')] });
  const [c] = await seen;
  assert.deepEqual(
    c.workloads.map((w) => [w.uid, w.before, w.after?.uid]),
    [['u1', undefined, 'u1']],
  );
  assert.deepEqual([c.services, c.policies], [[SVC], ['backend/p']]);
  let events = 0;
  s.on('change', () => events++);
  assert.equal(
    s.update({
      workloads: [wl('u1', {}, { [SVC]: { '80': 8080 } })],
      policies: [policy('p')],
      removedServices: ['absent/x'],
    }),
    undefined,
  );
  assert.equal(events, 0);
  const relabelled = s.update({ workloads: [wl('u1', { canonicalRevision: 'v2' }, { [SVC]: { '80': 8080 } })] });
  assert.deepEqual(
    [relabelled?.workloads.map((w) => w.before?.canonicalRevision), relabelled?.services, relabelled?.policies],
    [['latest'], [], []],
    'a workload-only change touches neither services nor policies',
  );
});

test('a whole local config applies as the difference from what is held', () => {
  const s = new ProxyState();
  const cfg = {
    workloads: [wl('u1'), wl('u2', { workloadIps: ['127.75.10.2'] })],
    services: [svc()],
    policies: [policy('p')],
  };
  s.apply(cfg);
  assert.equal(s.apply(cfg), undefined, 'the same file again changes nothing');
  const c = s.apply({ ...cfg, workloads: [wl('u1')], policies: [] });
  assert.deepEqual(
    [c?.workloads.map((w) => [w.uid, w.after]), c?.services, c?.policies],
    [[['u2', undefined]], [], ['backend/p']],
  );
  assert.equal(s.workloadByAddr('', '127.75.10.2'), undefined);
  assert.equal(s.apply({ workloads: [], services: [], policies: [] })?.services.length, 1);
  assert.deepEqual(s.dump(), { workloads: [], services: [], policies: [], stagedServices: {} });
});
