/**
 * Every permission the embedded API server grants besides `system:masters`, as one table of bindings, each with
 * its role's rules inline. Three sources, copied rule for rule:
 *
 * - Kubernetes' bootstrap policy (kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go and
 *   cluster roles' default bindings): what every authenticated user may do.
 * - Istio's Helm charts (istio/istio manifests/charts/...) rendered with the ambient profile's defaults
 *   (`global.istiod.enableAnalysis` false, `taint.enabled` false, `pilotCertProvider: istiod`, no revision,
 *   release namespace istio-system, `repair.repairPods` true, `ambient.enabled` true): istiod, the istio reader,
 *   the CNI node agent; ztunnel's chart grants its account nothing outside OpenShift.
 * - kubeadm's CoreDNS add-on: the cluster DNS's `system:coredns`.
 *
 * Anonymous requests are refused by authentication (as with `--anonymous-auth=false`), so the bootstrap
 * policy's grants to `system:unauthenticated` are left out: an unauthenticated user is granted nothing.
 */

export interface PolicyRule {
  readonly verbs: readonly string[];
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly resourceNames?: readonly string[];
  readonly nonResourceURLs?: readonly string[];
}

export interface Subject {
  readonly kind: 'ServiceAccount' | 'Group' | 'User';
  readonly name: string;
  readonly namespace?: string;
}

export interface PolicyBinding {
  /** The upstream file the role and binding come from. */
  readonly source: string;
  /** A RoleBinding (with its namespace) grants its rules in that namespace only. */
  readonly binding: {
    readonly kind: 'ClusterRoleBinding' | 'RoleBinding';
    readonly name: string;
    readonly namespace?: string;
  };
  readonly role: { readonly kind: 'ClusterRole' | 'Role'; readonly name: string };
  readonly subjects: readonly Subject[];
  readonly rules: readonly PolicyRule[];
}

/** The namespace Kubernetes' own add-ons (the cluster DNS) run in. */
const KUBE_SYSTEM = 'kube-system';

/** The namespace Istio's charts install into. */
export const ISTIO_NAMESPACE = 'istio-system';

const sa = (name: string): Subject => ({ kind: 'ServiceAccount', name, namespace: ISTIO_NAMESPACE });
const group = (name: string): Subject => ({ kind: 'Group', name });

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
const TOKEN_REVIEW: PolicyRule = {
  apiGroups: ['authentication.k8s.io'],
  resources: ['tokenreviews'],
  verbs: ['create'],
};
const SUBJECT_ACCESS_REVIEW: PolicyRule = {
  apiGroups: ['authorization.k8s.io'],
  resources: ['subjectaccessreviews'],
  verbs: ['create'],
};

const ISTIOD_CHARTS = 'istio manifests/charts/istio-control/istio-discovery/templates';
const KUBEADM_DNS = 'kubernetes cmd/kubeadm/app/phases/addons/dns/manifests.go';
const CNI_CHARTS = 'istio manifests/charts/istio-cni/templates';
const BOOTSTRAP_POLICY = 'kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go';

export const RBAC_POLICY: readonly PolicyBinding[] = [
  {
    source: `${BOOTSTRAP_POLICY} (system:discovery)`,
    binding: { kind: 'ClusterRoleBinding', name: 'system:discovery' },
    role: { kind: 'ClusterRole', name: 'system:discovery' },
    subjects: [group('system:authenticated')],
    rules: [
      {
        verbs: ['get'],
        nonResourceURLs: [
          '/livez',
          '/readyz',
          '/healthz',
          '/version',
          '/version/',
          '/api',
          '/api/*',
          '/apis',
          '/apis/*',
          '/openapi',
          '/openapi/*',
        ],
      },
    ],
  },
  {
    source: `${BOOTSTRAP_POLICY} (system:basic-user)`,
    binding: { kind: 'ClusterRoleBinding', name: 'system:basic-user' },
    role: { kind: 'ClusterRole', name: 'system:basic-user' },
    subjects: [group('system:authenticated')],
    rules: [
      {
        verbs: ['create'],
        apiGroups: ['authorization.k8s.io'],
        resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
      },
      { verbs: ['create'], apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'] },
    ],
  },
  {
    source: `${BOOTSTRAP_POLICY} (system:public-info-viewer)`,
    binding: { kind: 'ClusterRoleBinding', name: 'system:public-info-viewer' },
    role: { kind: 'ClusterRole', name: 'system:public-info-viewer' },
    subjects: [group('system:authenticated')],
    rules: [{ verbs: ['get'], nonResourceURLs: ['/livez', '/readyz', '/healthz', '/version', '/version/'] }],
  },
  {
    source: `${BOOTSTRAP_POLICY} (system:service-account-issuer-discovery)`,
    binding: { kind: 'ClusterRoleBinding', name: 'system:service-account-issuer-discovery' },
    role: { kind: 'ClusterRole', name: 'system:service-account-issuer-discovery' },
    subjects: [group('system:serviceaccounts')],
    rules: [
      {
        verbs: ['get'],
        nonResourceURLs: [
          '/.well-known/openid-configuration',
          '/.well-known/openid-configuration/',
          '/openid/v1/jwks',
          '/openid/v1/jwks/',
        ],
      },
    ],
  },
  {
    source: `${ISTIOD_CHARTS}/clusterrole.yaml, clusterrolebinding.yaml (istiod-clusterrole)`,
    binding: { kind: 'ClusterRoleBinding', name: 'istiod-clusterrole-istio-system' },
    role: { kind: 'ClusterRole', name: 'istiod-clusterrole-istio-system' },
    subjects: [sa('istiod')],
    rules: [
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
    ],
  },
  {
    source: `${ISTIOD_CHARTS}/clusterrole.yaml, clusterrolebinding.yaml (istiod-gateway-controller)`,
    binding: { kind: 'ClusterRoleBinding', name: 'istiod-gateway-controller-istio-system' },
    role: { kind: 'ClusterRole', name: 'istiod-gateway-controller-istio-system' },
    subjects: [sa('istiod')],
    rules: [
      { apiGroups: ['apps'], verbs: MANAGE, resources: ['deployments'] },
      { apiGroups: ['autoscaling'], verbs: MANAGE, resources: ['horizontalpodautoscalers'] },
      { apiGroups: ['policy'], verbs: MANAGE, resources: ['poddisruptionbudgets'] },
      { apiGroups: [''], verbs: MANAGE, resources: ['services'] },
      { apiGroups: [''], verbs: MANAGE, resources: ['serviceaccounts'] },
    ],
  },
  {
    source: `${ISTIOD_CHARTS}/role.yaml, rolebinding.yaml`,
    binding: { kind: 'RoleBinding', name: 'istiod', namespace: ISTIO_NAMESPACE },
    role: { kind: 'Role', name: 'istiod' },
    subjects: [sa('istiod')],
    rules: [
      { apiGroups: ['networking.istio.io'], verbs: ['create'], resources: ['gateways'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['create', 'get', 'watch', 'list', 'update', 'delete'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['delete'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update', 'patch', 'create'] },
    ],
  },
  {
    source: `${ISTIOD_CHARTS}/reader-clusterrole.yaml, reader-clusterrolebinding.yaml`,
    binding: { kind: 'ClusterRoleBinding', name: 'istio-reader-clusterrole-istio-system' },
    role: { kind: 'ClusterRole', name: 'istio-reader-clusterrole-istio-system' },
    subjects: [sa('istio-reader-service-account')],
    rules: [
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
    ],
  },
  {
    source: `${CNI_CHARTS}/clusterrole.yaml, clusterrolebinding.yaml (istio-cni)`,
    binding: { kind: 'ClusterRoleBinding', name: 'istio-cni' },
    role: { kind: 'ClusterRole', name: 'istio-cni' },
    subjects: [sa('istio-cni')],
    rules: [{ apiGroups: [''], resources: ['pods', 'nodes', 'namespaces'], verbs: READ }],
  },
  {
    source: `${CNI_CHARTS}/clusterrole.yaml, clusterrolebinding.yaml (istio-cni-repair-role; repairPods needs no more)`,
    binding: { kind: 'ClusterRoleBinding', name: 'istio-cni-repair-rolebinding' },
    role: { kind: 'ClusterRole', name: 'istio-cni-repair-role' },
    subjects: [sa('istio-cni')],
    rules: [
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['watch', 'get', 'list'] },
    ],
  },
  {
    // The node agent patches a pod's ambient annotation through pods/status, the lower privilege
    // (istio cni/pkg/util/podutil.go AnnotateEnrolledPod).
    source: `${CNI_CHARTS}/clusterrole.yaml, clusterrolebinding.yaml (istio-cni-ambient)`,
    binding: { kind: 'ClusterRoleBinding', name: 'istio-cni-ambient' },
    role: { kind: 'ClusterRole', name: 'istio-cni-ambient' },
    subjects: [sa('istio-cni')],
    rules: [
      { apiGroups: [''], resources: ['pods/status'], verbs: ['patch', 'update'] },
      { apiGroups: ['apps'], resources: ['daemonsets'], resourceNames: ['istio-cni-node'], verbs: ['get'] },
    ],
  },
  {
    // `amesh cluster-dns` runs as CoreDNS's ServiceAccount (src/up/cluster-dns-manifest.ts).
    source: `${KUBEADM_DNS} (CoreDNSClusterRole, CoreDNSClusterRoleBinding)`,
    binding: { kind: 'ClusterRoleBinding', name: 'system:coredns' },
    role: { kind: 'ClusterRole', name: 'system:coredns' },
    subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: KUBE_SYSTEM }],
    rules: [
      { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
    ],
  },
];
