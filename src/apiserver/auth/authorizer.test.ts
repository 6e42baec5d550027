import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../kube-object.js';
import { BOOTSTRAP_POLICY_OBJECTS } from '../rbac/bootstrap-reconcile.js';
import { RbacCache } from '../rbac/rbac-cache.js';
import { RbacAuthorizer, forbidden, type Attributes } from './authorizer.js';
import { serviceAccountUser, type UserInfo } from './user-info.js';

const RBAC = 'rbac.authorization.k8s.io';
const saUser = (namespace: string, name: string): UserInfo => serviceAccountUser({ namespace, name, uid: 'u' });
const ZTUNNEL = saUser('istio-system', 'ztunnel');
const CNI = saUser('istio-system', 'istio-cni');
const WEB = saUser('shop', 'web');
const ADMIN: UserInfo = { username: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] };
const ANONYMOUS: UserInfo = { username: 'system:anonymous', groups: ['system:unauthenticated'] };
const person = (name: string, ...groups: string[]): UserInfo => ({
  username: name,
  groups: [...groups, 'system:authenticated'],
});

const obj = (
  kind: string,
  name: string,
  namespace: string | undefined,
  fields: Record<string, unknown>,
): KubeObject => ({
  apiVersion: `${RBAC}/v1`,
  kind,
  metadata: { name, ...(namespace !== undefined ? { namespace } : {}) },
  ...fields,
});
const ref = (kind: string, name: string): unknown => ({ apiGroup: RBAC, kind, name });
const OBJECTS: KubeObject[] = [
  obj('ClusterRole', 'ops', undefined, {
    rules: [
      { verbs: ['*'], apiGroups: ['apps'], resources: ['deployments', '*/scale'] },
      { verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['settings'] },
      { verbs: ['get'], nonResourceURLs: ['/metrics', '/logs/*'] },
    ],
  }),
  obj('ClusterRoleBinding', 'ops', undefined, {
    roleRef: ref('ClusterRole', 'ops'),
    subjects: [{ kind: 'Group', apiGroup: RBAC, name: 'ops' }],
  }),
  obj('Role', 'reader', 'shop', { rules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }] }),
  obj('RoleBinding', 'reader', 'shop', {
    roleRef: ref('Role', 'reader'),
    subjects: [{ kind: 'ServiceAccount', name: 'web' }],
  }),
  obj('RoleBinding', 'ops-in-shop', 'shop', {
    roleRef: ref('ClusterRole', 'ops'),
    subjects: [{ kind: 'User', apiGroup: RBAC, name: 'bob' }],
  }),
  obj('RoleBinding', 'broken', 'shop', {
    roleRef: ref('Role', 'missing'),
    subjects: [{ kind: 'User', apiGroup: RBAC, name: 'carol' }],
  }),
];
const CACHE = RbacCache.of([...BOOTSTRAP_POLICY_OBJECTS, ...OBJECTS]);
const AUTHORIZER = new RbacAuthorizer(CACHE);

const resource = (
  user: UserInfo,
  verb: string,
  apiGroup: string,
  res: string,
  namespace = '',
  name?: string,
): Attributes => {
  const [r, subresource] = res.split('/') as [string, string | undefined];
  return {
    user,
    verb,
    apiGroup,
    resource: r,
    ...(subresource !== undefined ? { subresource } : {}),
    namespace,
    ...(name !== undefined ? { name } : {}),
  };
};
const allowed = (a: Attributes): boolean => AUTHORIZER.authorize(a).allowed;

test('a rule matches `*` verbs, `*/subresource`, resourceNames only by name, and URL prefixes ending in `*`', () => {
  const ops = person('olga', 'ops');
  assert.equal(allowed(resource(ops, 'patch', 'apps', 'deployments', 'default', 'web')), true);
  assert.equal(allowed(resource(ops, 'get', 'apps', 'deployments/scale', 'default', 'web')), true);
  assert.equal(allowed(resource(ops, 'update', 'apps', 'statefulsets/scale', 'default', 'db')), true);
  assert.equal(allowed(resource(ops, 'get', 'apps', 'statefulsets', 'default', 'db')), false);
  assert.equal(allowed(resource(ops, 'get', 'apps', 'deployments/status', 'default', 'web')), false);
  assert.equal(allowed(resource(ops, 'get', '', 'configmaps', 'default', 'settings')), true);
  assert.equal(allowed(resource(ops, 'get', '', 'configmaps', 'default', 'other')), false);
  assert.equal(allowed(resource(ops, 'list', '', 'configmaps', 'default')), false);
  assert.equal(allowed({ user: ops, verb: 'get', path: '/metrics' }), true);
  assert.equal(allowed({ user: ops, verb: 'get', path: '/logs/kubelet.log' }), true);
  assert.equal(allowed({ user: ops, verb: 'get', path: '/logs' }), false);
  assert.equal(allowed({ user: ops, verb: 'post', path: '/metrics' }), false);
});

test("a RoleBinding grants only in its namespace, never URLs; a ServiceAccount subject without a namespace is the binding's", () => {
  assert.equal(allowed(resource(WEB, 'list', '', 'pods', 'shop')), true);
  assert.equal(allowed(resource(WEB, 'list', '', 'pods', 'default')), false);
  assert.equal(allowed(resource(WEB, 'list', '', 'pods')), false);
  assert.equal(allowed(resource(saUser('default', 'web'), 'list', '', 'pods', 'shop')), false);
  const bob = person('bob');
  assert.equal(allowed(resource(bob, 'patch', 'apps', 'deployments', 'shop', 'web')), true);
  assert.equal(allowed(resource(bob, 'patch', 'apps', 'deployments', 'default', 'web')), false);
  assert.equal(allowed({ user: bob, verb: 'get', path: '/metrics' }), false);
});

test("the reason: which binding allowed a request, or the missing roles a refusal's bindings name (the lister's wording)", () => {
  assert.deepEqual(AUTHORIZER.authorize(resource(WEB, 'get', '', 'pods', 'shop', 'web-1')), {
    allowed: true,
    reason: 'RBAC: allowed by RoleBinding "reader/shop" of Role "reader" to ServiceAccount "web/shop"',
  });
  assert.equal(
    AUTHORIZER.authorize({ user: WEB, verb: 'get', path: '/version' }).reason,
    'RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"',
  );
  assert.deepEqual(AUTHORIZER.authorize(resource(person('carol'), 'get', '', 'pods', 'shop', 'x')), {
    allowed: false,
    reason: 'RBAC: role.rbac.authorization.k8s.io "missing" not found',
  });
  assert.deepEqual(AUTHORIZER.authorize(resource(ADMIN, 'delete', '', 'nodes', '', 'n')), {
    allowed: true,
    reason: '',
  });
});

test('the cache follows changes: a binding removed takes its grant with it, one added grants at once', () => {
  const cache = RbacCache.of(OBJECTS);
  const authorizer = new RbacAuthorizer(cache);
  const a = resource(WEB, 'list', '', 'pods', 'shop');
  assert.equal(authorizer.authorize(a).allowed, true);
  cache.remove(OBJECTS[3]!);
  assert.equal(authorizer.authorize(a).allowed, false);
  cache.put(OBJECTS[3]!);
  assert.equal(authorizer.authorize(a).allowed, true);
});

test('the bootstrap policy: discovery, /version, health and issuer discovery for every authenticated user; health and version alone for anonymous; other paths only for system:masters', () => {
  for (const path of ['/api', '/api/v1', '/apis', '/apis/apps/v1', '/openapi/v3']) {
    assert.equal(AUTHORIZER.authorize({ user: ZTUNNEL, verb: 'get', path }).allowed, true, path);
    assert.equal(AUTHORIZER.authorize({ user: ANONYMOUS, verb: 'get', path }).allowed, false, path);
  }
  for (const path of ['/version', '/healthz', '/readyz', '/livez']) {
    assert.equal(AUTHORIZER.authorize({ user: ZTUNNEL, verb: 'get', path }).allowed, true, path);
    assert.equal(AUTHORIZER.authorize({ user: ANONYMOUS, verb: 'get', path }).allowed, true, path);
  }
  assert.equal(AUTHORIZER.authorize({ user: ZTUNNEL, verb: 'get', path: '/openid/v1/jwks' }).allowed, true);
  assert.equal(AUTHORIZER.authorize({ user: ZTUNNEL, verb: 'get', path: '/metrics' }).allowed, false);
  assert.equal(AUTHORIZER.authorize({ user: ZTUNNEL, verb: 'post', path: '/api' }).allowed, false);
  assert.equal(AUTHORIZER.authorize({ user: ADMIN, verb: 'get', path: '/metrics' }).allowed, true);
});

test('a 403 is worded as kube-apiserver words it, for namespaced, named, cluster-scoped and non-resource requests', () => {
  const e = forbidden({ user: ZTUNNEL, verb: 'list', apiGroup: '', resource: 'pods', namespace: 'default' });
  assert.equal(e.code, 403);
  assert.equal(e.reason, 'Forbidden');
  assert.equal(
    e.message,
    'pods is forbidden: User "system:serviceaccount:istio-system:ztunnel" cannot list resource "pods" in API group "" in the namespace "default"',
  );
  assert.deepEqual(e.details, { kind: 'pods' });
  const named = forbidden({
    user: CNI,
    verb: 'patch',
    apiGroup: '',
    resource: 'pods',
    namespace: 'default',
    name: 'web-1',
  });
  assert.equal(
    named.message,
    'pods "web-1" is forbidden: User "system:serviceaccount:istio-system:istio-cni" cannot patch resource "pods" in API group "" in the namespace "default"',
  );
  assert.deepEqual(named.details, { name: 'web-1', kind: 'pods' });
  const cluster = forbidden({
    user: ZTUNNEL,
    verb: 'list',
    apiGroup: 'security.istio.io',
    resource: 'authorizationpolicies',
  });
  assert.equal(
    cluster.message,
    'authorizationpolicies.security.istio.io is forbidden: User "system:serviceaccount:istio-system:ztunnel" cannot list resource "authorizationpolicies" in API group "security.istio.io" at the cluster scope',
  );
  const sub = forbidden({
    user: ZTUNNEL,
    verb: 'create',
    apiGroup: '',
    resource: 'serviceaccounts',
    subresource: 'token',
    namespace: 'istio-system',
    name: 'istiod',
  });
  assert.match(
    sub.message,
    /^serviceaccounts "istiod" is forbidden: .* cannot create resource "serviceaccounts\/token" in API group "" in the namespace "istio-system"$/,
  );
  assert.equal(
    forbidden({ user: ZTUNNEL, verb: 'get', path: '/metrics' }).message,
    'forbidden: User "system:serviceaccount:istio-system:ztunnel" cannot get path "/metrics"',
  );
});
