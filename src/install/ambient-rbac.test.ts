import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RbacAuthorizer, type Attributes } from '../apiserver/auth/authorizer.js';
import { serviceAccountUser, type UserInfo } from '../apiserver/auth/user-info.js';
import type { KubeObject } from '../apiserver/kube-object.js';
import { BOOTSTRAP_POLICY_OBJECTS } from '../apiserver/rbac/bootstrap-reconcile.js';
import { RbacCache } from '../apiserver/rbac/rbac-cache.js';
import { kindOfObject } from '../apiserver/kinds.js';
import { decodeError } from '../apiserver/validation/decode.js';
import { validateObjectMeta } from '../apiserver/validation/object-meta.js';
import { clusterDnsRbacObjects } from '../up/cluster-dns-manifest.js';
import { generateManifest } from './generate-manifest.js';
import { parseSetFlag } from './set-flag.js';

const RBAC_KINDS = new Set(['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);
const AMBIENT = generateManifest({ files: [], sets: [parseSetFlag('profile=ambient')] }).sets;
/** The RBAC objects the ambient profile renders for one component. */
const rbacOf = (component: 'Pilot' | 'Cni'): KubeObject[] =>
  (AMBIENT.find((s) => s.component.name === component)?.objects ?? []).filter((o) => RBAC_KINDS.has(o.kind));
/** istiod's grants (istio-discovery chart) and the node agent's (istio-cni chart); ztunnel's chart grants none. */
const ISTIOD_RBAC = rbacOf('Pilot');
const ISTIO_CNI_RBAC = rbacOf('Cni');

/**
 * What a cluster with `amesh install --set profile=ambient` holds (as `amesh up` makes one): Kubernetes' bootstrap
 * policy, then Istio's grants as the ambient profile renders them, and CoreDNS's.
 */
const AUTHORIZER = new RbacAuthorizer(
  RbacCache.of([
    ...BOOTSTRAP_POLICY_OBJECTS,
    ...ISTIOD_RBAC,
    ...ISTIO_CNI_RBAC,
    ...(clusterDnsRbacObjects() as unknown as KubeObject[]),
  ]),
);

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

/** The table: who may do what, as Istio's charts, kubeadm's CoreDNS grant and Kubernetes' bootstrap policy grant it. */
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
    assert.equal(AUTHORIZER.authorize(a).allowed, allowed);
  });
}

test("the reason names the binding, role and subject as Kubernetes' RBAC authorizer does", () => {
  const reason = (a: Attributes): string => AUTHORIZER.authorize(a).reason;
  assert.equal(
    reason({ user: ISTIOD, verb: 'create', apiGroup: 'authentication.k8s.io', resource: 'tokenreviews' }),
    'RBAC: allowed by ClusterRoleBinding "istiod-clusterrole-istio-system" of ClusterRole "istiod-clusterrole-istio-system" to ServiceAccount "istiod/istio-system"',
  );
  assert.equal(
    reason({ user: ISTIOD, verb: 'create', apiGroup: '', resource: 'secrets', namespace: 'istio-system' }),
    'RBAC: allowed by RoleBinding "istiod/istio-system" of Role "istiod" to ServiceAccount "istiod/istio-system"',
  );
});

test("every object decodes and validates as the API server's RBAC kinds require", () => {
  for (const o of [...ISTIOD_RBAC, ...ISTIO_CNI_RBAC, ...clusterDnsRbacObjects()]) {
    const obj = structuredClone(o) as KubeObject;
    const k = kindOfObject(obj.apiVersion, obj.kind)!;
    assert.equal(decodeError(k, obj), undefined);
    k.strategy?.prepareForCreate?.(obj);
    assert.deepEqual([...validateObjectMeta(k, obj), ...(k.strategy?.validate?.(obj) ?? [])], [], obj.metadata.name);
  }
});
