import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../api-error.js';
import { RbacAuthorizer } from '../auth/authorizer.js';
import { serviceAccountUser, type UserInfo } from '../auth/user-info.js';
import { findKind } from '../kinds.js';
import type { KindInfo } from '../kind-info.js';
import type { KubeObject } from '../kube-object.js';
import { EscalationCheck } from './escalation-check.js';
import { RbacCache } from './rbac-cache.js';

const RBAC = 'rbac.authorization.k8s.io';
const kind = (plural: string): KindInfo => findKind(RBAC, 'v1', plural)!;
const obj = (k: string, name: string, namespace: string | undefined, fields: Record<string, unknown>): KubeObject => ({
  apiVersion: `${RBAC}/v1`,
  kind: k,
  metadata: { name, ...(namespace !== undefined ? { namespace } : {}) },
  ...fields,
});
const GET_PODS = { verbs: ['get'], apiGroups: [''], resources: ['pods'] };
const GET_SECRETS = { verbs: ['get', 'list'], apiGroups: [''], resources: ['secrets'] };
const binding = (
  k: string,
  name: string,
  namespace: string | undefined,
  roleKind: string,
  role: string,
  subject: object,
): KubeObject =>
  obj(k, name, namespace, { roleRef: { apiGroup: RBAC, kind: roleKind, name: role }, subjects: [subject] });

const DEPLOYER = serviceAccountUser({ namespace: 'shop', name: 'deployer', uid: 'u' });
const BINDER = { username: 'binder', groups: ['system:authenticated'] };
const ESCALATOR = { username: 'escalator', groups: ['system:authenticated'] };
const NEARLY_ADMIN = { username: 'nearly', groups: ['system:authenticated'] };
const sa = { kind: 'ServiceAccount', name: 'deployer', namespace: 'shop' };
const rbacUser = (name: string): object => ({ kind: 'User', apiGroup: RBAC, name });

const CACHE = RbacCache.of([
  obj('Role', 'deployer', 'shop', {
    rules: [GET_PODS, { verbs: ['create', 'update'], apiGroups: [RBAC], resources: ['roles', 'rolebindings'] }],
  }),
  binding('RoleBinding', 'deployer', 'shop', 'Role', 'deployer', sa),
  obj('Role', 'pod-reader', 'shop', { rules: [GET_PODS] }),
  obj('ClusterRole', 'secret-reader', undefined, { rules: [GET_SECRETS] }),
  obj('ClusterRole', 'bind-secret-reader', undefined, {
    rules: [{ verbs: ['bind'], apiGroups: [RBAC], resources: ['clusterroles'], resourceNames: ['secret-reader'] }],
  }),
  binding('ClusterRoleBinding', 'binder', undefined, 'ClusterRole', 'bind-secret-reader', rbacUser('binder')),
  obj('ClusterRole', 'escalate-roles', undefined, {
    rules: [{ verbs: ['escalate'], apiGroups: [RBAC], resources: ['roles'] }],
  }),
  binding('ClusterRoleBinding', 'escalator', undefined, 'ClusterRole', 'escalate-roles', rbacUser('escalator')),
  obj('ClusterRole', 'all-resources', undefined, { rules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }] }),
  binding('ClusterRoleBinding', 'nearly', undefined, 'ClusterRole', 'all-resources', rbacUser('nearly')),
]);
const CHECK = new EscalationCheck(CACHE, new RbacAuthorizer(CACHE));

function refusal(plural: string, o: KubeObject, user: UserInfo, old?: KubeObject): string | undefined {
  try {
    CHECK.check(kind(plural), o, old, user);
    return undefined;
  } catch (e) {
    assert.ok(e instanceof ApiError && e.code === 403);
    assert.deepEqual(e.details, { name: o.metadata.name, group: RBAC, kind: plural });
    return e.message;
  }
}

test('a role may hold only rules its writer holds in its namespace; the 403 lists what is missing as kube does', () => {
  assert.equal(refusal('roles', obj('Role', 'mine', 'shop', { rules: [GET_PODS] }), DEPLOYER), undefined);
  assert.equal(
    refusal('roles', obj('Role', 'secret-reader', 'shop', { rules: [GET_PODS, GET_SECRETS] }), DEPLOYER),
    'roles.rbac.authorization.k8s.io "secret-reader" is forbidden: user "system:serviceaccount:shop:deployer" (groups=["system:serviceaccounts" "system:serviceaccounts:shop" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}',
  );
  assert.match(
    refusal('roles', obj('Role', 'mine', 'default', { rules: [GET_PODS] }), DEPLOYER) ?? '',
    /Verbs:\["get"\]/,
  );
  assert.equal(refusal('roles', obj('Role', 'x', 'shop', { rules: [GET_SECRETS] }), ESCALATOR), undefined);
  assert.equal(
    refusal('clusterroles', obj('ClusterRole', 'x', undefined, { rules: [GET_SECRETS] }), {
      username: 'kubernetes-admin',
      groups: ['system:masters'],
    }),
    undefined,
  );
});

test('an update that changes only owner references and finalizers is never checked', () => {
  const old = obj('Role', 'secret-reader', 'shop', { rules: [GET_SECRETS] });
  const owned = structuredClone(old);
  owned.metadata.finalizers = ['example.com/keep'];
  assert.equal(refusal('roles', owned, DEPLOYER, old), undefined);
  const widened = structuredClone(old);
  widened.rules = [GET_SECRETS, GET_PODS];
  assert.match(refusal('roles', widened, DEPLOYER, old) ?? '', /not currently held/);
});

test('an aggregation rule needs everything, unless the writer may escalate ClusterRoles', () => {
  const aggregated = obj('ClusterRole', 'agg', undefined, {
    aggregationRule: { clusterRoleSelectors: [{ matchLabels: { x: 'true' } }] },
    rules: null,
  });
  assert.equal(
    refusal('clusterroles', aggregated, DEPLOYER),
    'clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule',
  );
  assert.equal(refusal('clusterroles', aggregated, NEARLY_ADMIN), undefined);
});

test("binding a role needs its rules in the binding's namespace, or the bind verb on it; a missing role is named", () => {
  const rb = (name: string, roleKind: string, role: string): KubeObject =>
    binding('RoleBinding', name, 'shop', roleKind, role, { kind: 'ServiceAccount', name: 'web' });
  assert.equal(refusal('rolebindings', rb('readers', 'Role', 'pod-reader'), DEPLOYER), undefined);
  assert.equal(
    refusal('rolebindings', rb('secrets', 'ClusterRole', 'secret-reader'), DEPLOYER),
    'rolebindings.rbac.authorization.k8s.io "secrets" is forbidden: user "system:serviceaccount:shop:deployer" (groups=["system:serviceaccounts" "system:serviceaccounts:shop" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}',
  );
  assert.equal(
    refusal('rolebindings', rb('nope', 'Role', 'nope'), DEPLOYER),
    'rolebindings.rbac.authorization.k8s.io "nope" is forbidden: roles.rbac.authorization.k8s.io "nope" not found',
  );
  assert.equal(refusal('rolebindings', rb('secrets', 'ClusterRole', 'secret-reader'), BINDER), undefined);
  assert.equal(
    refusal(
      'clusterrolebindings',
      binding('ClusterRoleBinding', 's', undefined, 'ClusterRole', 'secret-reader', sa),
      BINDER,
    ),
    undefined,
  );
  assert.match(
    refusal(
      'clusterrolebindings',
      binding('ClusterRoleBinding', 's', undefined, 'ClusterRole', 'all-resources', sa),
      BINDER,
    ) ?? '',
    /Resources:\["\*"\]/,
  );
});
