import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findKind } from '../kinds.js';
import type { KindInfo } from '../kind-info.js';
import type { KubeObject } from '../kube-object.js';
import { exemptFromWebhooks, webhookMatch, type AdmissionTarget } from './webhook-rules.js';

const kind = (group: string, plural: string): KindInfo => findKind(group, 'v1', plural) as KindInfo;
const PODS = kind('', 'pods');
const NAMESPACES = kind('', 'namespaces');
const NODES = kind('', 'nodes');
const POLICIES = kind('security.istio.io', 'authorizationpolicies');

const obj = (labels: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', labels },
});

const target = (o: Partial<AdmissionTarget> = {}): AdmissionTarget => ({
  kind: PODS,
  subresource: undefined,
  operation: 'CREATE',
  object: obj(),
  oldObject: undefined,
  namespaceLabels: {},
  ...o,
});

const hook = (rule: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], ...rule }],
  ...extra,
});

test('a resource without a subresource part never matches a subresource, `*` included', () => {
  assert.ok(webhookMatch(hook({ resources: ['*'] }), target()));
  assert.equal(webhookMatch(hook({ resources: ['*'] }), target({ subresource: 'status' })), undefined);
  assert.equal(webhookMatch(hook({ resources: ['pods'] }), target({ subresource: 'status' })), undefined);
  assert.ok(webhookMatch(hook({ resources: ['pods/status'] }), target({ subresource: 'status' })));
  assert.ok(webhookMatch(hook({ resources: ['*/status'] }), target({ subresource: 'status' })));
  assert.ok(webhookMatch(hook({ resources: ['pods/*'] }), target({ subresource: 'status' })));
  assert.equal(webhookMatch(hook({ resources: ['pods/status'] }), target()), undefined);
});

test('operations, groups and scope must all match', () => {
  assert.equal(webhookMatch(hook({ operations: ['UPDATE'] }), target()), undefined);
  assert.ok(webhookMatch(hook({ operations: ['*'] }), target()));
  assert.equal(webhookMatch(hook({ apiGroups: ['apps'] }), target()), undefined);
  assert.equal(webhookMatch(hook({ scope: 'Cluster' }), target()), undefined);
  assert.ok(webhookMatch(hook({ scope: 'Namespaced' }), target()));
  const nodes = hook({ resources: ['nodes'], scope: 'Namespaced' });
  assert.equal(webhookMatch(nodes, target({ kind: NODES, namespaceLabels: undefined })), undefined);
});

test('matchPolicy Equivalent sends the object at the version the rule names; Exact does not match it', () => {
  const rule = { apiGroups: ['security.istio.io'], apiVersions: ['v1beta1'], resources: ['authorizationpolicies'] };
  const t = target({ kind: POLICIES });
  assert.deepEqual(webhookMatch(hook(rule), t), { version: 'v1beta1', converted: true });
  assert.deepEqual(webhookMatch(hook(rule, { matchPolicy: 'Equivalent' }), t), { version: 'v1beta1', converted: true });
  assert.equal(webhookMatch(hook(rule, { matchPolicy: 'Exact' }), t), undefined);
  assert.deepEqual(webhookMatch(hook({ ...rule, apiVersions: ['*'] }), t), { version: 'v1', converted: false });
});

test("the namespace selector reads the request namespace's labels, and a Namespace's own", () => {
  const w = hook({ resources: ['*'] }, { namespaceSelector: { matchLabels: { team: 'a' } } });
  assert.ok(webhookMatch(w, target({ namespaceLabels: { team: 'a' } })));
  assert.equal(webhookMatch(w, target({ namespaceLabels: { team: 'b' } })), undefined);
  assert.equal(webhookMatch(w, target({ namespaceLabels: undefined })), undefined);
  const ns = (labels: Record<string, string>): AdmissionTarget =>
    target({ kind: NAMESPACES, object: obj(labels), namespaceLabels: undefined });
  assert.ok(webhookMatch(w, ns({ team: 'a' })));
  assert.equal(webhookMatch(w, ns({})), undefined);
  // Other cluster-scoped kinds are not filtered by namespace.
  const nodes = hook({ resources: ['nodes'] }, { namespaceSelector: { matchLabels: { team: 'a' } } });
  assert.ok(webhookMatch(nodes, target({ kind: NODES, namespaceLabels: undefined })));
});

test('the object selector matches the new object or the old one', () => {
  const w = hook(
    { operations: ['UPDATE', 'DELETE'] },
    { objectSelector: { matchExpressions: [{ key: 'app', operator: 'Exists' }] } },
  );
  const update = (o: KubeObject | undefined, old: KubeObject | undefined): AdmissionTarget =>
    target({ operation: 'UPDATE', object: o, oldObject: old });
  assert.ok(webhookMatch(w, update(obj({ app: 'x' }), obj())));
  assert.ok(webhookMatch(w, update(obj(), obj({ app: 'x' }))));
  assert.equal(webhookMatch(w, update(obj(), obj())), undefined);
  assert.ok(webhookMatch(w, target({ operation: 'DELETE', object: undefined, oldObject: obj({ app: 'x' }) })));
});

test('writes of webhook configurations never go to webhooks', () => {
  const vwc = findKind('admissionregistration.k8s.io', 'v1', 'validatingwebhookconfigurations') as KindInfo;
  assert.equal(exemptFromWebhooks(vwc), true);
  assert.equal(exemptFromWebhooks(PODS), false);
  const all = hook({ apiGroups: ['*'], resources: ['*'], apiVersions: ['*'] });
  assert.equal(webhookMatch(all, target({ kind: vwc, namespaceLabels: undefined })), undefined);
});
