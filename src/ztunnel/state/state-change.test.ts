import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProxyState } from './proxy-state.js';
import type { LocalWorkload } from './local-config.js';
import type { Workload } from './workload.js';
import { changesWorkloadsOn, mayAlterPolicyDecision, type StateChange } from './state-change.js';

function wl(uid: string, o: Partial<Workload> = {}): LocalWorkload {
  const workload: Workload = {
    uid,
    workloadIps: ['127.75.11.1'],
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
    services: [],
    capacity: 1,
    ...o,
  };
  return { workload, services: {} };
}

/** The change that replacing `before` by `after` (either may be absent) makes. */
function change(before: LocalWorkload | undefined, after: LocalWorkload | undefined): StateChange {
  const s = new ProxyState();
  if (before !== undefined) s.update({ workloads: [before] });
  const c =
    after === undefined ? s.update({ removedWorkloads: [before!.workload.uid] }) : s.update({ workloads: [after] });
  assert.ok(c !== undefined);
  return c;
}

test('a workload change on another node neither reconciles listeners nor re-checks live connections', () => {
  const c = change(wl('u', { node: 'n2' }), wl('u', { node: 'n2', authorizationPolicies: ['backend/p'] }));
  assert.equal(changesWorkloadsOn(c, 'n1'), false);
  assert.equal(mayAlterPolicyDecision(c, 'n1'), false);
});

test('a local workload change outside its policy lookup (labels, revision, status) reconciles listeners only', () => {
  for (const o of [{ canonicalRevision: 'v2' }, { status: 'Unhealthy' as const }, { workloadName: 'echo-v2' }]) {
    const c = change(wl('u'), wl('u', o));
    assert.equal(changesWorkloadsOn(c, 'n1'), true);
    assert.equal(mayAlterPolicyDecision(c, 'n1'), false, JSON.stringify(o));
  }
});

test('a local workload whose policy list or namespace changes, or that leaves, re-checks live connections', () => {
  assert.equal(
    mayAlterPolicyDecision(change(wl('u'), wl('u', { authorizationPolicies: ['backend/deny'] })), 'n1'),
    true,
  );
  assert.equal(
    mayAlterPolicyDecision(
      change(
        wl('u', { authorizationPolicies: ['backend/a', 'backend/b'] }),
        wl('u', { authorizationPolicies: ['backend/b', 'backend/a'] }),
      ),
      'n1',
    ),
    true,
  );
  assert.equal(mayAlterPolicyDecision(change(wl('u'), wl('u', { namespace: 'other' })), 'n1'), true);
  assert.equal(mayAlterPolicyDecision(change(wl('u'), undefined), 'n1'), true);
  const moved = change(wl('u', { node: 'n2' }), wl('u', { node: 'n1' }));
  assert.deepEqual(
    [changesWorkloadsOn(moved, 'n1'), mayAlterPolicyDecision(moved, 'n1')],
    [true, false],
    'moved onto this node: listeners start, no connection of it to re-check yet',
  );
});

test('any policy change re-checks live connections, wherever the workloads are', () => {
  const s = new ProxyState();
  const c = s.update({
    policies: [{ name: 'p', namespace: 'elsewhere', scope: 'Namespace', action: 'Allow', rules: [], dryRun: false }],
  });
  assert.ok(c !== undefined);
  assert.equal(changesWorkloadsOn(c, 'n1'), false);
  assert.equal(mayAlterPolicyDecision(c, 'n1'), true);
});
