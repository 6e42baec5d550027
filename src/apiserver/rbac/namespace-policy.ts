/**
 * The bootstrap policy's Roles and RoleBindings in kube-system and kube-public, as kube-apiserver reconciles them
 * (kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/namespace_policy.go, rendered as its
 * testdata/namespace-roles.yaml and namespace-role-bindings.yaml show them): leader election for the controller
 * manager and the scheduler, the authentication ConfigMap's readers, and the bootstrap-token controllers.
 */
import type { KubeObject } from '../kube-object.js';
import { EVENTS_RULE, READ, role, roleBinding, rule, serviceAccount, user } from './policy-builders.js';

const KUBE_SYSTEM = 'kube-system';
const KUBE_PUBLIC = 'kube-public';
const LEADER_LOCKING = ['create', 'get', 'list', 'update', 'watch'];
const leaderLocking = [
  rule(LEADER_LOCKING, ['coordination.k8s.io'], ['leases']),
  rule(LEADER_LOCKING, ['coordination.k8s.io'], ['leasecandidates']),
];

export const BOOTSTRAP_ROLES: readonly KubeObject[] = [
  role(KUBE_PUBLIC, 'system:controller:bootstrap-signer', [
    rule(READ, [''], ['configmaps']),
    rule(['update'], [''], ['configmaps'], ['cluster-info']),
    EVENTS_RULE,
  ]),
  role(KUBE_SYSTEM, 'extension-apiserver-authentication-reader', [
    rule(READ, [''], ['configmaps'], ['extension-apiserver-authentication']),
  ]),
  role(KUBE_SYSTEM, 'system::leader-locking-kube-controller-manager', leaderLocking),
  role(KUBE_SYSTEM, 'system::leader-locking-kube-scheduler', leaderLocking),
  role(KUBE_SYSTEM, 'system:controller:bootstrap-signer', [rule(READ, [''], ['secrets'])]),
  role(KUBE_SYSTEM, 'system:controller:cloud-provider', [
    rule(['create', 'get', 'list', 'watch'], [''], ['configmaps']),
  ]),
  role(KUBE_SYSTEM, 'system:controller:token-cleaner', [
    rule(['delete', 'get', 'list', 'watch'], [''], ['secrets']),
    EVENTS_RULE,
  ]),
];

export const BOOTSTRAP_ROLE_BINDINGS: readonly KubeObject[] = [
  roleBinding(KUBE_PUBLIC, 'system:controller:bootstrap-signer', 'system:controller:bootstrap-signer', [
    serviceAccount(KUBE_SYSTEM, 'bootstrap-signer'),
  ]),
  roleBinding(
    KUBE_SYSTEM,
    'system::extension-apiserver-authentication-reader',
    'extension-apiserver-authentication-reader',
    [user('system:kube-controller-manager'), user('system:kube-scheduler')],
  ),
  roleBinding(
    KUBE_SYSTEM,
    'system::leader-locking-kube-controller-manager',
    'system::leader-locking-kube-controller-manager',
    [
      user('system:kube-controller-manager'),
      serviceAccount(KUBE_SYSTEM, 'kube-controller-manager'),
      serviceAccount(KUBE_SYSTEM, 'leader-election-controller'),
    ],
  ),
  roleBinding(KUBE_SYSTEM, 'system::leader-locking-kube-scheduler', 'system::leader-locking-kube-scheduler', [
    user('system:kube-scheduler'),
    serviceAccount(KUBE_SYSTEM, 'kube-scheduler'),
  ]),
  roleBinding(KUBE_SYSTEM, 'system:controller:bootstrap-signer', 'system:controller:bootstrap-signer', [
    serviceAccount(KUBE_SYSTEM, 'bootstrap-signer'),
  ]),
  roleBinding(KUBE_SYSTEM, 'system:controller:cloud-provider', 'system:controller:cloud-provider', [
    serviceAccount(KUBE_SYSTEM, 'cloud-provider'),
  ]),
  roleBinding(KUBE_SYSTEM, 'system:controller:token-cleaner', 'system:controller:token-cleaner', [
    serviceAccount(KUBE_SYSTEM, 'token-cleaner'),
  ]),
];
