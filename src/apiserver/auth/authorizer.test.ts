import { test } from 'node:test';
import assert from 'node:assert/strict';
import { authorize, forbidden, type Attributes } from './authorizer.js';
import { serviceAccountUser, type UserInfo } from './user-info.js';

const saUser = (namespace: string, name: string): UserInfo => serviceAccountUser({ namespace, name, uid: 'u' });
const ZTUNNEL = saUser('istio-system', 'ztunnel');
const CNI = saUser('istio-system', 'istio-cni');
const ISTIOD = saUser('istio-system', 'istiod');
const WEB = saUser('default', 'web');
const COREDNS = saUser('kube-system', 'coredns');
const ADMIN: UserInfo = { username: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] };
const ANONYMOUS: UserInfo = { username: 'system:anonymous', groups: ['system:unauthenticated'] };

type Row = [
  user: UserInfo,
  verb: string,
  apiGroup: string,
  resource: string,
  namespace: string,
  allowed: boolean,
  name?: string,
];

/** The table: who may do what, as Istio's charts and Kubernetes' bootstrap policy grant it. */
const ROWS: Row[] = [
  [ZTUNNEL, 'list', '', 'secrets', 'default', false],
  [ZTUNNEL, 'list', '', 'pods', 'default', false],
  [ZTUNNEL, 'get', '', 'pods', 'istio-system', false, 'ztunnel-x'],
  [ZTUNNEL, 'create', 'authentication.k8s.io', 'tokenreviews', '', false],
  // Every call the node agent (informers, pod annotation, Events, the DaemonSet at shutdown) and amesh-cni (the pod
  // and its namespace) make as istio-cni, then what Istio's istio-cni ClusterRoles do not grant.
  [CNI, 'list', '', 'pods', '', true],
  [CNI, 'watch', '', 'pods', '', true],
  [CNI, 'list', '', 'namespaces', '', true],
  [CNI, 'watch', '', 'namespaces', '', true],
  [CNI, 'get', '', 'pods', 'default', true, 'web-1'],
  [CNI, 'get', '', 'namespaces', '', true, 'default'],
  [CNI, 'get', '', 'nodes', '', true, 'node-a'],
  [CNI, 'patch', '', 'pods/status', 'default', true, 'web-1'],
  [CNI, 'update', '', 'pods/status', 'default', true, 'web-1'],
  [CNI, 'create', '', 'events', 'default', true],
  [CNI, 'patch', '', 'events', 'default', true, 'web-1.1'],
  [CNI, 'get', 'apps', 'daemonsets', 'istio-system', true, 'istio-cni-node'],
  [CNI, 'create', '', 'pods', 'default', false],
  [CNI, 'patch', '', 'pods', 'default', false, 'web-1'],
  [CNI, 'update', '', 'pods', 'default', false, 'web-1'],
  [CNI, 'delete', '', 'pods', 'default', false, 'web-1'],
  [CNI, 'create', '', 'pods/exec', 'default', false, 'web-1'],
  [CNI, 'patch', '', 'namespaces', '', false, 'default'],
  [CNI, 'patch', '', 'nodes/status', '', false, 'node-a'],
  [CNI, 'list', '', 'secrets', '', false],
  [CNI, 'get', '', 'secrets', 'istio-system', false, 'istio-ca-secret'],
  [CNI, 'list', '', 'configmaps', 'istio-system', false],
  [CNI, 'list', '', 'events', 'default', false],
  [CNI, 'create', '', 'serviceaccounts/token', 'istio-system', false, 'istio-cni'],
  [CNI, 'create', 'authentication.k8s.io', 'tokenreviews', '', false],
  [CNI, 'list', 'security.istio.io', 'authorizationpolicies', '', false],
  [CNI, 'get', 'apps', 'daemonsets', 'istio-system', false, 'ztunnel'],
  [CNI, 'list', 'apps', 'daemonsets', 'istio-system', false],
  // What the cluster DNS's informers read, as kubeadm's system:coredns grants it, and nothing more.
  [COREDNS, 'list', '', 'services', '', true],
  [COREDNS, 'watch', '', 'services', '', true],
  [COREDNS, 'list', 'discovery.k8s.io', 'endpointslices', '', true],
  [COREDNS, 'watch', 'discovery.k8s.io', 'endpointslices', '', true],
  [COREDNS, 'list', '', 'namespaces', '', true],
  [COREDNS, 'watch', '', 'pods', '', true],
  [COREDNS, 'get', '', 'services', 'default', false, 'kubernetes'],
  [COREDNS, 'list', '', 'secrets', '', false],
  [COREDNS, 'create', '', 'services', 'default', false],
  [ISTIOD, 'create', 'authentication.k8s.io', 'tokenreviews', '', true],
  [ISTIOD, 'create', 'authorization.k8s.io', 'subjectaccessreviews', '', true],
  [ISTIOD, 'watch', '', 'pods', '', true],
  [ISTIOD, 'list', 'discovery.k8s.io', 'endpointslices', '', true],
  [ISTIOD, 'watch', 'security.istio.io', 'authorizationpolicies', '', true],
  [ISTIOD, 'patch', 'security.istio.io', 'authorizationpolicies/status', 'default', true],
  [ISTIOD, 'update', 'security.istio.io', 'authorizationpolicies', 'default', false],
  [ISTIOD, 'watch', 'gateway.networking.k8s.io', 'httproutes', '', true],
  [ISTIOD, 'create', '', 'configmaps', 'default', true],
  [ISTIOD, 'delete', '', 'configmaps', 'default', false, 'istio-ca-root-cert'],
  [ISTIOD, 'delete', '', 'configmaps', 'istio-system', true, 'x'],
  [ISTIOD, 'create', '', 'secrets', 'istio-system', true],
  [ISTIOD, 'create', '', 'secrets', 'default', false],
  [ISTIOD, 'patch', '', 'pods', 'default', false, 'web-1'],
  [ISTIOD, 'list', 'apps', 'replicasets', '', false],
  [WEB, 'list', '', 'pods', 'default', false],
  [WEB, 'create', 'authorization.k8s.io', 'selfsubjectaccessreviews', '', true],
  [ADMIN, 'deletecollection', 'security.istio.io', 'authorizationpolicies', 'default', true],
  [ADMIN, 'create', '', 'serviceaccounts/token', 'istio-system', true, 'ztunnel'],
  [ANONYMOUS, 'get', '', 'pods', 'default', false, 'x'],
  [ANONYMOUS, 'create', 'authorization.k8s.io', 'selfsubjectaccessreviews', '', false],
];

for (const [user, verb, apiGroup, res, namespace, allowed, name] of ROWS) {
  const [resource, subresource] = res.split('/') as [string, string | undefined];
  test(`${user.username} ${allowed ? 'may' : 'may not'} ${verb} ${res}${apiGroup === '' ? '' : `.${apiGroup}`}${name !== undefined ? ` "${name}"` : ''}${namespace !== '' ? ` in ${namespace}` : ''}`, () => {
    const a: Attributes = {
      user,
      verb,
      apiGroup,
      resource,
      ...(subresource !== undefined ? { subresource } : {}),
      namespace,
      ...(name !== undefined ? { name } : {}),
    };
    assert.equal(authorize(a).allowed, allowed);
  });
}

test('non-resource paths: discovery, /version and health for every authenticated user; nothing for anonymous; other paths only for system:masters', () => {
  for (const path of [
    '/api',
    '/api/v1',
    '/apis',
    '/apis/apps/v1',
    '/version',
    '/healthz',
    '/readyz',
    '/livez',
    '/openapi/v3',
  ]) {
    assert.equal(authorize({ user: ZTUNNEL, verb: 'get', path }).allowed, true, path);
    assert.equal(authorize({ user: ANONYMOUS, verb: 'get', path }).allowed, false, path);
  }
  assert.equal(authorize({ user: ZTUNNEL, verb: 'get', path: '/openid/v1/jwks' }).allowed, true);
  assert.equal(authorize({ user: ZTUNNEL, verb: 'get', path: '/metrics' }).allowed, false);
  assert.equal(authorize({ user: ZTUNNEL, verb: 'post', path: '/api' }).allowed, false);
  assert.equal(authorize({ user: ADMIN, verb: 'get', path: '/metrics' }).allowed, true);
});

test("the reason names the binding, role and subject as Kubernetes' RBAC authorizer does", () => {
  assert.equal(
    authorize({ user: ISTIOD, verb: 'create', apiGroup: 'authentication.k8s.io', resource: 'tokenreviews' }).reason,
    'RBAC: allowed by ClusterRoleBinding "istiod-clusterrole-istio-system" of ClusterRole "istiod-clusterrole-istio-system" to ServiceAccount "istiod/istio-system"',
  );
  assert.equal(
    authorize({ user: ISTIOD, verb: 'create', apiGroup: '', resource: 'secrets', namespace: 'istio-system' }).reason,
    'RBAC: allowed by RoleBinding "istiod/istio-system" of Role "istiod" to ServiceAccount "istiod/istio-system"',
  );
  assert.equal(
    authorize({ user: WEB, verb: 'get', path: '/version' }).reason,
    'RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"',
  );
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
