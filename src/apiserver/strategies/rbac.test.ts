import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject, ObjectMeta } from '../kube-object.js';
import { findKind } from '../kinds.js';
import type { KindInfo } from '../kind-info.js';
import { decodeError } from '../validation/decode.js';
import { validateObjectMeta } from '../validation/object-meta.js';
import { clusterRoleBindingStrategy, clusterRoleStrategy, roleBindingStrategy, roleStrategy } from './rbac.js';

const RBAC = 'rbac.authorization.k8s.io';
const kind = (plural: string): KindInfo => findKind(RBAC, 'v1', plural)!;
const of = (k: string, fields: { metadata: ObjectMeta } & Record<string, unknown>): KubeObject => ({
  ...fields,
  apiVersion: `${RBAC}/v1`,
  kind: k,
});
const messages = (causes: { field?: string; message: string }[]): string[] =>
  causes.map((c) => `${c.field ?? ''}: ${c.message}`);

test('a rule needs verbs and either API groups with resources or non-resource URLs, never both; a Role takes no URLs', () => {
  const role = of('Role', {
    metadata: { name: 'r', namespace: 'ns' },
    rules: [
      { apiGroups: [''], resources: ['pods'] },
      { verbs: ['get'], nonResourceURLs: ['/healthz'] },
      { verbs: ['get'], nonResourceURLs: ['/x'], resources: ['pods'] },
      { verbs: ['get'] },
      { verbs: ['get'], apiGroups: [''], resources: ['pods', 'secrets'], resourceNames: ['a'] },
    ],
  });
  assert.deepEqual(messages(roleStrategy.validate!(role)), [
    'rules[0].verbs: Required value: verbs must contain at least one value',
    'rules[1].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs',
    'rules[2].nonResourceURLs: Invalid value: []string{"/x"}: namespaced rules cannot apply to non-resource URLs',
    'rules[2].nonResourceURLs: Invalid value: []string{"/x"}: rules cannot apply to both regular resources and non-resource URLs',
    'rules[3].apiGroups: Required value: resource rules must supply at least one api group',
    'rules[3].resources: Required value: resource rules must supply at least one resource',
    'rules[4].resourceNames: Required value: resource names cannot apply to multiple resources',
  ]);
  const clusterRole = of('ClusterRole', {
    metadata: { name: 'c' },
    rules: [{ verbs: ['get'], nonResourceURLs: ['/healthz'] }],
  });
  assert.deepEqual(clusterRoleStrategy.validate!(clusterRole), []);
});

test('a ClusterRole with an aggregation rule needs selectors, each a valid label selector; roles store rules: null', () => {
  const empty = of('ClusterRole', { metadata: { name: 'agg' }, aggregationRule: { clusterRoleSelectors: [] } });
  clusterRoleStrategy.prepareForCreate!(empty);
  assert.equal(empty.rules, null);
  assert.deepEqual(messages(clusterRoleStrategy.validate!(empty)), [
    'aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil',
  ]);
  const bad = of('ClusterRole', {
    metadata: { name: 'agg' },
    aggregationRule: { clusterRoleSelectors: [{ matchExpressions: [{ key: 'a', operator: 'Near' }] }] },
  });
  assert.deepEqual(messages(clusterRoleStrategy.validate!(bad)), [
    'aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator',
  ]);
});

test("bindings get their roleRef's and User/Group subjects' apiGroup by default, and are checked as kube's validation checks them", () => {
  const binding = of('RoleBinding', {
    metadata: { name: 'b', namespace: 'ns' },
    roleRef: { kind: 'Role', name: 'r' },
    subjects: [
      { kind: 'User', name: 'alice' },
      { kind: 'ServiceAccount', name: 'web' },
    ],
  });
  roleBindingStrategy.prepareForCreate!(binding);
  assert.deepEqual(binding.roleRef, { kind: 'Role', name: 'r', apiGroup: RBAC });
  assert.deepEqual(binding.subjects, [
    { kind: 'User', name: 'alice', apiGroup: RBAC },
    { kind: 'ServiceAccount', name: 'web' },
  ]);
  assert.deepEqual(roleBindingStrategy.validate!(binding), []);

  const bad = of('ClusterRoleBinding', {
    metadata: { name: 'b' },
    roleRef: { apiGroup: 'example.com', kind: 'Role', name: 'a/b' },
    subjects: [
      { kind: 'ServiceAccount', name: 'Web_1', apiGroup: RBAC },
      { kind: 'Group', name: '', apiGroup: 'x' },
      { kind: 'Robot', name: 'r2' },
    ],
  });
  assert.deepEqual(messages(clusterRoleBindingStrategy.validate!(bad)), [
    'roleRef.apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"',
    'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
    'roleRef.name: Invalid value: "a/b": may not contain \'/\'',
    "subjects[0].name: Invalid value: \"Web_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    'subjects[0].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: ""',
    'subjects[0].namespace: Required value',
    'subjects[1].name: Required value',
    'subjects[1].name: Invalid value: "": group name cannot be empty',
    'subjects[1].apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io"',
    'subjects[2].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
  ]);
});

test("a binding's roleRef never changes: the update is refused with the RoleRef as Go prints it", () => {
  const old = of('RoleBinding', {
    metadata: { name: 'b', namespace: 'ns' },
    roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'view' },
  });
  const changed = structuredClone(old);
  (changed.roleRef as { name: string }).name = 'edit';
  assert.deepEqual(messages(roleBindingStrategy.validateUpdate!(changed, old)), [
    'roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef',
  ]);
  assert.deepEqual(roleBindingStrategy.validateUpdate!(structuredClone(old), old), []);
});

test('RBAC names are path segments: colons are fine, a slash or `..` is not', () => {
  const named = (name: string): KubeObject => of('ClusterRole', { metadata: { name } });
  assert.deepEqual(validateObjectMeta(kind('clusterroles'), named('system:controller:job-controller')), []);
  assert.deepEqual(messages(validateObjectMeta(kind('clusterroles'), named('..'))), [
    'metadata.name: Invalid value: "..": may not be \'..\'',
  ]);
  assert.deepEqual(messages(validateObjectMeta(kind('clusterrolebindings'), named('a/b%c'))), [
    'metadata.name: Invalid value: "a/b%c": may not contain \'/\'',
    'metadata.name: Invalid value: "a/b%c": may not contain \'%\'',
  ]);
});

test('RBAC bodies that would not decode into the Go types are 400s worded as the real server words them', () => {
  const cases: [string, KubeObject, string][] = [
    [
      'clusterroles',
      of('ClusterRole', { metadata: { name: 'x' }, rules: { verbs: ['get'] } }),
      'ClusterRole in version "v1" cannot be handled as a ClusterRole: json: cannot unmarshal object into Go struct field ClusterRole.rules of type []v1.PolicyRule',
    ],
    [
      'roles',
      of('Role', { metadata: { name: 'x' }, rules: [{ verbs: 'get' }] }),
      'Role in version "v1" cannot be handled as a Role: json: cannot unmarshal string into Go struct field PolicyRule.rules.verbs of type []string',
    ],
    [
      'rolebindings',
      of('RoleBinding', { metadata: { name: 'x' }, roleRef: { kind: 'Role', name: 7 } }),
      'RoleBinding in version "v1" cannot be handled as a RoleBinding: json: cannot unmarshal number into Go struct field RoleRef.roleRef.name of type string',
    ],
    [
      'clusterrolebindings',
      of('ClusterRoleBinding', { metadata: { name: 'x' }, subjects: ['alice'] }),
      'ClusterRoleBinding in version "v1" cannot be handled as a ClusterRoleBinding: json: cannot unmarshal string into Go struct field ClusterRoleBinding.subjects of type v1.Subject',
    ],
  ];
  for (const [plural, obj, message] of cases) assert.equal(decodeError(kind(plural), obj)?.message, message);
});
