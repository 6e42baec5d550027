import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseLocalConfig } from './state/local-config.js';
import { evaluate, type RbacConnection } from './rbac.js';
import type { Authorization } from './state/policy.js';

const web = { trustDomain: 'cluster.local', namespace: 'frontend', serviceAccount: 'web' };
const conn = (over: Partial<RbacConnection> = {}): RbacConnection => ({
  srcIp: '127.0.10.1',
  dstIp: '127.0.10.2',
  dstPort: 8080,
  srcIdentity: web,
  ...over,
});

function policies(yaml: string): Authorization[] {
  return [...parseLocalConfig('p.yaml', `policies:\n${yaml}`).policies];
}

test('no policies: allow', () => {
  assert.equal(evaluate([], conn()).allowed, true);
});

test('DENY wins over a matching ALLOW', () => {
  const p = policies(`
- {name: a, namespace: backend, scope: Namespace, action: Allow, rules: [[[{principals: [{Presence: []}]}]]]}
- {name: d, namespace: backend, scope: Namespace, action: Deny, rules: [[[{destinationPorts: [8080]}]]]}
`);
  const d = evaluate(p, conn());
  assert.equal(d.allowed, false);
  assert.match(d.allowed ? '' : d.reason, /explicitly denied by: backend\/d/);
});

test('ALLOW policy with zero rules denies everything (allow policies exist, but none allowed)', () => {
  const d = evaluate(policies('- {name: a, namespace: ns, scope: Namespace, action: Allow, rules: []}'), conn());
  assert.equal(d.allowed, false);
  assert.match(d.allowed ? '' : d.reason, /none allowed/);
});

test('a rule with zero clauses matches everything', () => {
  assert.equal(
    evaluate(policies('- {name: a, namespace: ns, scope: Namespace, action: Allow, rules: [[]]}'), conn()).allowed,
    true,
  );
});

test('an empty Match is skipped, so a clause of only empty matches never matches', () => {
  const d = evaluate(policies('- {name: d, namespace: ns, scope: Namespace, action: Deny, rules: [[[{}]]]}'), conn());
  assert.equal(d.allowed, true);
});

test('principals match without the spiffe:// prefix; plaintext (no identity) never matches a principal', () => {
  const p = policies(
    '- {name: a, namespace: ns, scope: Namespace, action: Allow, rules: [[[{principals: [{Exact: cluster.local/ns/frontend/sa/web}]}]]]}',
  );
  assert.equal(evaluate(p, conn()).allowed, true);
  assert.equal(evaluate(p, conn({ srcIdentity: undefined })).allowed, false);
  const withPrefix = policies(
    '- {name: a, namespace: ns, scope: Namespace, action: Allow, rules: [[[{principals: [{Exact: "spiffe://cluster.local/ns/frontend/sa/web"}]}]]]}',
  );
  assert.equal(evaluate(withPrefix, conn()).allowed, false);
});

test('STRICT-style deny: notPrincipals presence denies plaintext only', () => {
  const p = policies(
    '- {name: s, namespace: istio-system, scope: WorkloadSelector, action: Deny, rules: [[[{notPrincipals: [{Presence: []}]}]]]}',
  );
  assert.equal(evaluate(p, conn()).allowed, true);
  assert.equal(evaluate(p, conn({ srcIdentity: undefined })).allowed, false);
});

test('destination port is the application port; notDestinationPorts excludes', () => {
  const p = policies(
    '- {name: a, namespace: ns, scope: Namespace, action: Allow, rules: [[[{notDestinationPorts: [9999]}]]]}',
  );
  assert.equal(evaluate(p, conn({ dstPort: 8080 })).allowed, true);
  assert.equal(evaluate(p, conn({ dstPort: 9999 })).allowed, false);
});

test('clauses are AND-ed, matches within a clause OR-ed; namespaces, service accounts and CIDRs', () => {
  const p = policies(`
- name: a
  namespace: ns
  scope: Namespace
  action: Allow
  rules:
  - - [{namespaces: [{Prefix: front}]}, {serviceAccounts: [{namespace: other, serviceAccount: x}]}]
    - [{sourceIps: [127.0.10.0/24]}]
`);
  assert.equal(evaluate(p, conn()).allowed, true);
  assert.equal(evaluate(p, conn({ srcIp: '127.0.11.1' })).allowed, false);
  assert.equal(evaluate(p, conn({ srcIdentity: { ...web, namespace: 'back' } })).allowed, false);
  assert.equal(
    evaluate(p, conn({ srcIdentity: { trustDomain: 'cluster.local', namespace: 'other', serviceAccount: 'x' } }))
      .allowed,
    true,
  );
});

test('dry-run policies are only noted, never enforced', () => {
  const p = policies(`
- {name: d, namespace: ns, scope: Namespace, action: Deny, dryRun: true, rules: [[]]}
- {name: a, namespace: ns, scope: Namespace, action: Allow, dryRun: true, rules: []}
`);
  const d = evaluate(p, conn());
  assert.equal(d.allowed, true);
  assert.equal(d.dryRunNotes.length, 2);
});
