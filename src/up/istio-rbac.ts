/**
 * Istio's RBAC objects as its Helm charts render them with the ambient profile's defaults (no revision, release
 * namespace istio-system, `global.istiod.enableAnalysis` false, `taint.enabled` false, `pilotCertProvider: istiod`,
 * `repair.repairPods` true, `ambient.enabled` true), which `amesh up` applies through the API as an installer does:
 * - istio manifests/charts/istio-control/istio-discovery/templates (release `istiod`): clusterrole.yaml and
 *   clusterrolebinding.yaml (istiod's, and the gateway deployment controller's), role.yaml and rolebinding.yaml
 *   (istiod's in istio-system), reader-clusterrole.yaml and reader-clusterrolebinding.yaml;
 * - istio manifests/charts/istio-cni/templates (release `istio-cni`): clusterrole.yaml and clusterrolebinding.yaml
 *   (the node agent's reads, the repair controller's, and the ambient rights: pod annotation through
 *   `pods/status`, reading its own DaemonSet).
 * ztunnel's chart grants its account nothing outside OpenShift. Each object carries the labels its template
 * gives it, without the ones only Helm itself adds (`app.kubernetes.io/managed-by`, `helm.sh/chart`).
 */
import type {
  RbacV1Subject,
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1PolicyRule,
  V1Role,
  V1RoleBinding,
} from '@kubernetes/client-node';
import type { RbacObject } from './apply-rbac.js';

/** The namespace Istio's charts install into. */
export const ISTIO_NAMESPACE = 'istio-system';

const RBAC_API_VERSION = 'rbac.authorization.k8s.io/v1';
const RBAC_GROUP = 'rbac.authorization.k8s.io';
const READ = ['get', 'list', 'watch'];
const MANAGE = ['get', 'watch', 'list', 'update', 'patch', 'create', 'delete'];
const ISTIO_CONFIG_GROUPS = [
  'config.istio.io',
  'security.istio.io',
  'networking.istio.io',
  'authentication.istio.io',
  'rbac.istio.io',
  'telemetry.istio.io',
  'extensions.istio.io',
];
const MCS_GROUP = 'multicluster.x-k8s.io';
const TOKEN_REVIEW: V1PolicyRule = {
  apiGroups: ['authentication.k8s.io'],
  resources: ['tokenreviews'],
  verbs: ['create'],
};
const SUBJECT_ACCESS_REVIEW: V1PolicyRule = {
  apiGroups: ['authorization.k8s.io'],
  resources: ['subjectaccessreviews'],
  verbs: ['create'],
};

const account = (name: string): RbacV1Subject => ({ kind: 'ServiceAccount', name, namespace: ISTIO_NAMESPACE });

/** The labels istio-discovery's templates give its RBAC objects (`app` istiod or istio-reader). */
const discoveryLabels = (app: string): Record<string, string> => ({
  app,
  release: 'istiod',
  'app.kubernetes.io/name': app,
  'app.kubernetes.io/instance': 'istiod',
  'app.kubernetes.io/part-of': 'istio',
});

/** The labels istio-cni's templates give its RBAC objects. */
const cniLabels = (extra: Record<string, string>): Record<string, string> => ({
  ...extra,
  release: 'istio-cni',
  'istio.io/rev': 'default',
  'install.operator.istio.io/owning-resource': 'unknown',
  'operator.istio.io/component': 'Cni',
  'app.kubernetes.io/name': 'istio-cni',
  'app.kubernetes.io/instance': 'istio-cni',
  'app.kubernetes.io/part-of': 'istio',
});

function clusterRole(name: string, labels: Record<string, string>, rules: V1PolicyRule[]): V1ClusterRole {
  return { apiVersion: RBAC_API_VERSION, kind: 'ClusterRole', metadata: { name, labels }, rules };
}

function clusterRoleBinding(
  name: string,
  labels: Record<string, string>,
  role: string,
  subject: RbacV1Subject,
): V1ClusterRoleBinding {
  return {
    apiVersion: RBAC_API_VERSION,
    kind: 'ClusterRoleBinding',
    metadata: { name, labels },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: role },
    subjects: [subject],
  };
}

const ISTIOD_CLUSTER_ROLE = `istiod-clusterrole-${ISTIO_NAMESPACE}`;
const GATEWAY_CONTROLLER = `istiod-gateway-controller-${ISTIO_NAMESPACE}`;
const READER = `istio-reader-clusterrole-${ISTIO_NAMESPACE}`;

const ISTIOD_CLUSTER_ROLES: V1ClusterRole[] = [
  clusterRole(ISTIOD_CLUSTER_ROLE, discoveryLabels('istiod'), [
    {
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['mutatingwebhookconfigurations'],
      verbs: ['get', 'list', 'watch', 'update', 'patch'],
    },
    {
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['validatingwebhookconfigurations'],
      verbs: ['get', 'list', 'watch', 'update'],
    },
    { apiGroups: ISTIO_CONFIG_GROUPS, verbs: ['get', 'watch', 'list'], resources: ['*'] },
    { apiGroups: ['networking.istio.io'], verbs: MANAGE, resources: ['workloadentries'] },
    {
      apiGroups: ['networking.istio.io'],
      verbs: MANAGE,
      resources: ['workloadentries/status', 'serviceentries/status'],
    },
    { apiGroups: ['security.istio.io'], verbs: MANAGE, resources: ['authorizationpolicies/status'] },
    { apiGroups: [''], verbs: MANAGE, resources: ['services/status'] },
    { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: READ },
    { apiGroups: [''], resources: ['pods', 'nodes', 'services', 'namespaces', 'endpoints'], verbs: READ },
    { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: READ },
    { apiGroups: ['networking.k8s.io'], resources: ['ingresses', 'ingressclasses'], verbs: READ },
    { apiGroups: ['networking.k8s.io'], resources: ['ingresses/status'], verbs: ['*'] },
    { apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'get', 'list', 'watch', 'update'] },
    TOKEN_REVIEW,
    SUBJECT_ACCESS_REVIEW,
    {
      apiGroups: ['gateway.networking.k8s.io', 'gateway.networking.x-k8s.io'],
      resources: ['*'],
      verbs: ['get', 'watch', 'list'],
    },
    {
      apiGroups: ['gateway.networking.x-k8s.io'],
      resources: ['xbackends/status', 'xbackendtrafficpolicies/status'],
      verbs: ['update', 'patch'],
    },
    {
      apiGroups: ['gateway.networking.k8s.io'],
      resources: [
        'backendtlspolicies/status',
        'gatewayclasses/status',
        'gateways/status',
        'grpcroutes/status',
        'httproutes/status',
        'referencegrants/status',
        'tcproutes/status',
        'tlsroutes/status',
        'udproutes/status',
        'listenersets/status',
      ],
      verbs: ['update', 'patch'],
    },
    {
      apiGroups: ['gateway.networking.k8s.io'],
      resources: ['gatewayclasses'],
      verbs: ['create', 'update', 'patch', 'delete'],
    },
    { apiGroups: ['inference.networking.k8s.io'], resources: ['inferencepools'], verbs: ['get', 'watch', 'list'] },
    { apiGroups: ['inference.networking.k8s.io'], resources: ['inferencepools/status'], verbs: ['update', 'patch'] },
    { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'watch', 'list'] },
    { apiGroups: [MCS_GROUP], resources: ['serviceexports'], verbs: ['get', 'watch', 'list', 'create', 'delete'] },
    { apiGroups: [MCS_GROUP], resources: ['serviceimports'], verbs: ['get', 'watch', 'list'] },
  ]),
  clusterRole(GATEWAY_CONTROLLER, discoveryLabels('istiod'), [
    { apiGroups: ['apps'], verbs: MANAGE, resources: ['deployments'] },
    { apiGroups: ['autoscaling'], verbs: MANAGE, resources: ['horizontalpodautoscalers'] },
    { apiGroups: ['policy'], verbs: MANAGE, resources: ['poddisruptionbudgets'] },
    { apiGroups: [''], verbs: MANAGE, resources: ['services'] },
    { apiGroups: [''], verbs: MANAGE, resources: ['serviceaccounts'] },
  ]),
  clusterRole(READER, discoveryLabels('istio-reader'), [
    { apiGroups: ISTIO_CONFIG_GROUPS, resources: ['*'], verbs: READ },
    {
      apiGroups: [''],
      resources: [
        'endpoints',
        'pods',
        'services',
        'nodes',
        'replicationcontrollers',
        'namespaces',
        'secrets',
        'configmaps',
      ],
      verbs: READ,
    },
    { apiGroups: ['networking.istio.io'], verbs: ['get', 'watch', 'list'], resources: ['workloadentries'] },
    {
      apiGroups: ['networking.x-k8s.io', 'gateway.networking.k8s.io'],
      resources: ['gateways'],
      verbs: ['get', 'watch', 'list'],
    },
    { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: READ },
    { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: READ },
    { apiGroups: [MCS_GROUP], resources: ['serviceexports'], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
    { apiGroups: [MCS_GROUP], resources: ['serviceimports'], verbs: READ },
    { apiGroups: ['apps'], resources: ['replicasets'], verbs: READ },
    TOKEN_REVIEW,
    SUBJECT_ACCESS_REVIEW,
  ]),
];

const ISTIOD_CLUSTER_ROLE_BINDINGS: V1ClusterRoleBinding[] = [
  clusterRoleBinding(ISTIOD_CLUSTER_ROLE, discoveryLabels('istiod'), ISTIOD_CLUSTER_ROLE, account('istiod')),
  clusterRoleBinding(GATEWAY_CONTROLLER, discoveryLabels('istiod'), GATEWAY_CONTROLLER, account('istiod')),
  clusterRoleBinding(READER, discoveryLabels('istio-reader'), READER, account('istio-reader-service-account')),
];

const ISTIOD_ROLE: V1Role = {
  apiVersion: RBAC_API_VERSION,
  kind: 'Role',
  metadata: { name: 'istiod', namespace: ISTIO_NAMESPACE, labels: discoveryLabels('istiod') },
  rules: [
    { apiGroups: ['networking.istio.io'], verbs: ['create'], resources: ['gateways'] },
    { apiGroups: [''], resources: ['secrets'], verbs: ['create', 'get', 'watch', 'list', 'update', 'delete'] },
    { apiGroups: [''], resources: ['configmaps'], verbs: ['delete'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update', 'patch', 'create'] },
  ],
};

const ISTIOD_ROLE_BINDING: V1RoleBinding = {
  apiVersion: RBAC_API_VERSION,
  kind: 'RoleBinding',
  metadata: { name: 'istiod', namespace: ISTIO_NAMESPACE, labels: discoveryLabels('istiod') },
  roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name: 'istiod' },
  subjects: [account('istiod')],
};

const CNI_CLUSTER_ROLES: V1ClusterRole[] = [
  clusterRole('istio-cni', cniLabels({ app: 'istio-cni' }), [
    { apiGroups: [''], resources: ['pods', 'nodes', 'namespaces'], verbs: READ },
  ]),
  // repair.repairPods needs no more than these.
  clusterRole('istio-cni-repair-role', cniLabels({ app: 'istio-cni' }), [
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['watch', 'get', 'list'] },
  ]),
  // The node agent annotates a pod through pods/status, the lower privilege (istio cni/pkg/util/podutil.go).
  clusterRole('istio-cni-ambient', cniLabels({ app: 'istio-cni' }), [
    { apiGroups: [''], resources: ['pods/status'], verbs: ['patch', 'update'] },
    { apiGroups: ['apps'], resources: ['daemonsets'], resourceNames: ['istio-cni-node'], verbs: ['get'] },
  ]),
];

const CNI_CLUSTER_ROLE_BINDINGS: V1ClusterRoleBinding[] = [
  clusterRoleBinding('istio-cni', cniLabels({ app: 'istio-cni' }), 'istio-cni', account('istio-cni')),
  clusterRoleBinding(
    'istio-cni-repair-rolebinding',
    cniLabels({ 'k8s-app': 'istio-cni-repair' }),
    'istio-cni-repair-role',
    account('istio-cni'),
  ),
  clusterRoleBinding(
    'istio-cni-ambient',
    cniLabels({ 'k8s-app': 'istio-cni-repair' }),
    'istio-cni-ambient',
    account('istio-cni'),
  ),
];

/** istio-discovery's RBAC objects, roles before the bindings that refer to them. */
export const ISTIOD_RBAC: readonly RbacObject[] = [
  ...ISTIOD_CLUSTER_ROLES,
  ...ISTIOD_CLUSTER_ROLE_BINDINGS,
  ISTIOD_ROLE,
  ISTIOD_ROLE_BINDING,
];

/** istio-cni's RBAC objects, roles before their bindings. */
export const ISTIO_CNI_RBAC: readonly RbacObject[] = [...CNI_CLUSTER_ROLES, ...CNI_CLUSTER_ROLE_BINDINGS];
