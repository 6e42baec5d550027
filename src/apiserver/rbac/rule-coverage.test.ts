import { test } from 'node:test';
import assert from 'node:assert/strict';
import { breakdownRule, compactRules, compactString, uncoveredRules } from './rule-coverage.js';
import { policyRule, type PolicyRule } from './policy-rule.js';

const r = (o: Record<string, string[]>): PolicyRule => policyRule(o);

test('a rule breaks down into one rule per group, resource, verb and name, and per URL and verb', () => {
  assert.deepEqual(
    breakdownRule(r({ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'], resourceNames: ['a', 'b'] })).map(
      compactString,
    ),
    [
      '{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get"]}',
      '{APIGroups:[""], Resources:["pods"], ResourceNames:["b"], Verbs:["get"]}',
      '{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["list"]}',
      '{APIGroups:[""], Resources:["pods"], ResourceNames:["b"], Verbs:["list"]}',
    ],
  );
  assert.deepEqual(breakdownRule(r({ verbs: ['get'], nonResourceURLs: ['/a', '/b/*'] })).map(compactString), [
    '{NonResourceURLs:["/a"], Verbs:["get"]}',
    '{NonResourceURLs:["/b/*"], Verbs:["get"]}',
  ]);
});

test('covering: `*` verbs, groups and resources, `*\\/subresource`, URL prefixes; names only by a rule without names or naming them', () => {
  const owner = [
    r({ verbs: ['*'], apiGroups: ['apps'], resources: ['deployments', '*/scale'] }),
    r({ verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['a', 'b'] }),
    r({ verbs: ['get'], nonResourceURLs: ['/logs/*'] }),
  ];
  const covered = (servant: Record<string, string[]>): boolean => uncoveredRules(owner, [r(servant)]).length === 0;
  assert.equal(covered({ verbs: ['get', 'delete'], apiGroups: ['apps'], resources: ['deployments'] }), true);
  assert.equal(covered({ verbs: ['update'], apiGroups: ['apps'], resources: ['statefulsets/scale'] }), true);
  assert.equal(covered({ verbs: ['get'], apiGroups: ['apps'], resources: ['statefulsets'] }), false);
  assert.equal(covered({ verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['b'] }), true);
  assert.equal(covered({ verbs: ['get'], apiGroups: [''], resources: ['configmaps'] }), false);
  assert.equal(covered({ verbs: ['get'], nonResourceURLs: ['/logs/x', '/logs/*'] }), true);
  assert.equal(covered({ verbs: ['get'], nonResourceURLs: ['/metrics'] }), false);
  assert.equal(uncoveredRules([r({ verbs: ['*'], apiGroups: ['*'], resources: ['*'] })], owner.slice(0, 2)).length, 0);
});

test("what is missing compacts as kube's escalation message lists it: one line per group and resource", () => {
  const missing = uncoveredRules(
    [],
    [
      r({ verbs: ['get', 'list'], apiGroups: [''], resources: ['secrets', 'pods'] }),
      r({ verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['x'] }),
    ],
  );
  assert.deepEqual(compactRules(missing).map(compactString), [
    '{APIGroups:[""], Resources:["configmaps"], ResourceNames:["x"], Verbs:["get"]}',
    '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}',
    '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}',
  ]);
});
