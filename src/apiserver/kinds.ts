/**
 * The kinds table: every kind the embedded API server serves, built in (one entry each, at the version its objects
 * are stored at, plus one for each other version its CRD serves) or from stored CustomResourceDefinitions, and how
 * a kind is found by URL, by an object's apiVersion and kind, and in the store.
 */
import type { KindInfo, Subresource } from './kind-info.js';
import { customResourceSource } from './schema/custom-resource-schemas.js';
import { configMapStrategy } from './strategies/config-map.js';
import { controllerRevisionStrategy } from './strategies/controller-revision.js';
import { cronJobStrategy } from './strategies/cron-job.js';
import { customResourceStrategy } from './strategies/custom-resource.js';
import { customResourceDefinitionStrategy } from './strategies/custom-resource-definition.js';
import { daemonSetStrategy } from './strategies/daemon-set.js';
import { deploymentStrategy } from './strategies/deployment.js';
import { endpointSliceStrategy } from './strategies/endpoint-slice.js';
import { eventStrategy } from './strategies/event.js';
import { jobStrategy } from './strategies/job.js';
import { leaseStrategy } from './strategies/lease.js';
import { namespaceStrategy } from './strategies/namespace.js';
import { nodeStrategy } from './strategies/node.js';
import { podStrategy } from './strategies/pod.js';
import { podDisruptionBudgetStrategy } from './strategies/pod-disruption-budget.js';
import { horizontalPodAutoscalerStrategy } from './strategies/horizontal-pod-autoscaler.js';
import {
  clusterRoleBindingStrategy,
  clusterRoleStrategy,
  roleBindingStrategy,
  roleStrategy,
} from './strategies/rbac.js';
import { replicaSetStrategy } from './strategies/replica-set.js';
import { secretStrategy } from './strategies/secret.js';
import { serviceStrategy } from './strategies/service.js';
import { statefulSetStrategy } from './strategies/stateful-set.js';
import type { Strategy } from './strategies/strategy.js';
import {
  mutatingWebhookConfigurationStrategy,
  validatingWebhookConfigurationStrategy,
} from './strategies/webhook-configuration.js';

interface KindEntry {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  subresources?: Subresource[];
  review?: boolean;
  strategy?: Strategy;
}

const ISTIO = ['istio-io'];

const ENTRIES: KindEntry[] = [
  {
    group: '',
    version: 'v1',
    kind: 'Namespace',
    plural: 'namespaces',
    namespaced: false,
    shortNames: ['ns'],
    subresources: ['status'],
    strategy: namespaceStrategy,
  },
  {
    group: '',
    version: 'v1',
    kind: 'Pod',
    plural: 'pods',
    namespaced: true,
    shortNames: ['po'],
    categories: ['all'],
    subresources: ['status', 'binding'],
    strategy: podStrategy,
  },
  {
    group: '',
    version: 'v1',
    kind: 'Service',
    plural: 'services',
    namespaced: true,
    shortNames: ['svc'],
    categories: ['all'],
    subresources: ['status'],
    strategy: serviceStrategy,
  },
  {
    group: '',
    version: 'v1',
    kind: 'Node',
    plural: 'nodes',
    namespaced: false,
    shortNames: ['no'],
    subresources: ['status'],
    strategy: nodeStrategy,
  },
  {
    group: '',
    version: 'v1',
    kind: 'ServiceAccount',
    plural: 'serviceaccounts',
    namespaced: true,
    shortNames: ['sa'],
    subresources: ['token'],
  },
  { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true, strategy: secretStrategy },
  {
    group: '',
    version: 'v1',
    kind: 'ConfigMap',
    plural: 'configmaps',
    namespaced: true,
    shortNames: ['cm'],
    strategy: configMapStrategy,
  },
  {
    group: '',
    version: 'v1',
    kind: 'Event',
    plural: 'events',
    namespaced: true,
    shortNames: ['ev'],
    strategy: eventStrategy,
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'Deployment',
    plural: 'deployments',
    namespaced: true,
    shortNames: ['deploy'],
    categories: ['all'],
    subresources: ['status', 'scale'],
    strategy: deploymentStrategy,
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'ReplicaSet',
    plural: 'replicasets',
    namespaced: true,
    shortNames: ['rs'],
    categories: ['all'],
    subresources: ['status', 'scale'],
    strategy: replicaSetStrategy,
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'DaemonSet',
    plural: 'daemonsets',
    namespaced: true,
    shortNames: ['ds'],
    categories: ['all'],
    subresources: ['status'],
    strategy: daemonSetStrategy,
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'StatefulSet',
    plural: 'statefulsets',
    namespaced: true,
    shortNames: ['sts'],
    categories: ['all'],
    subresources: ['status', 'scale'],
    strategy: statefulSetStrategy,
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'ControllerRevision',
    plural: 'controllerrevisions',
    namespaced: true,
    strategy: controllerRevisionStrategy,
  },
  {
    group: 'batch',
    version: 'v1',
    kind: 'Job',
    plural: 'jobs',
    namespaced: true,
    categories: ['all'],
    subresources: ['status'],
    strategy: jobStrategy,
  },
  {
    group: 'batch',
    version: 'v1',
    kind: 'CronJob',
    plural: 'cronjobs',
    namespaced: true,
    shortNames: ['cj'],
    categories: ['all'],
    subresources: ['status'],
    strategy: cronJobStrategy,
  },
  {
    group: 'discovery.k8s.io',
    version: 'v1',
    kind: 'EndpointSlice',
    plural: 'endpointslices',
    namespaced: true,
    strategy: endpointSliceStrategy,
  },
  {
    group: 'coordination.k8s.io',
    version: 'v1',
    kind: 'Lease',
    plural: 'leases',
    namespaced: true,
    strategy: leaseStrategy,
  },
  {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'ValidatingWebhookConfiguration',
    plural: 'validatingwebhookconfigurations',
    namespaced: false,
    categories: ['api-extensions'],
    strategy: validatingWebhookConfigurationStrategy,
  },
  {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'MutatingWebhookConfiguration',
    plural: 'mutatingwebhookconfigurations',
    namespaced: false,
    categories: ['api-extensions'],
    strategy: mutatingWebhookConfigurationStrategy,
  },
  {
    group: 'security.istio.io',
    version: 'v1',
    kind: 'AuthorizationPolicy',
    plural: 'authorizationpolicies',
    namespaced: true,
    shortNames: ['ap'],
    categories: [...ISTIO, 'security-istio-io'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    group: 'security.istio.io',
    version: 'v1',
    kind: 'PeerAuthentication',
    plural: 'peerauthentications',
    namespaced: true,
    shortNames: ['pa'],
    categories: [...ISTIO, 'security-istio-io'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    group: 'security.istio.io',
    version: 'v1',
    kind: 'RequestAuthentication',
    plural: 'requestauthentications',
    namespaced: true,
    shortNames: ['ra'],
    categories: [...ISTIO, 'security-istio-io'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    group: 'networking.istio.io',
    version: 'v1',
    kind: 'ServiceEntry',
    plural: 'serviceentries',
    namespaced: true,
    shortNames: ['se'],
    categories: [...ISTIO, 'networking-istio-io'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    group: 'networking.istio.io',
    version: 'v1',
    kind: 'WorkloadEntry',
    plural: 'workloadentries',
    namespaced: true,
    shortNames: ['we'],
    categories: [...ISTIO, 'networking-istio-io'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    group: 'networking.istio.io',
    version: 'v1',
    kind: 'Gateway',
    plural: 'gateways',
    namespaced: true,
    shortNames: ['gw'],
    categories: [...ISTIO, 'networking-istio-io'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    group: 'networking.istio.io',
    version: 'v1',
    kind: 'VirtualService',
    plural: 'virtualservices',
    namespaced: true,
    shortNames: ['vs'],
    categories: [...ISTIO, 'networking-istio-io'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    group: 'networking.istio.io',
    version: 'v1',
    kind: 'DestinationRule',
    plural: 'destinationrules',
    namespaced: true,
    shortNames: ['dr'],
    categories: [...ISTIO, 'networking-istio-io'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    kind: 'GatewayClass',
    plural: 'gatewayclasses',
    namespaced: false,
    shortNames: ['gc'],
    categories: ['gateway-api'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    kind: 'Gateway',
    plural: 'gateways',
    namespaced: true,
    shortNames: ['gtw'],
    categories: ['gateway-api'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    kind: 'HTTPRoute',
    plural: 'httproutes',
    namespaced: true,
    categories: ['gateway-api'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    kind: 'GRPCRoute',
    plural: 'grpcroutes',
    namespaced: true,
    categories: ['gateway-api'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    kind: 'TLSRoute',
    plural: 'tlsroutes',
    namespaced: true,
    categories: ['gateway-api'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    kind: 'TCPRoute',
    plural: 'tcproutes',
    namespaced: true,
    categories: ['gateway-api'],
    subresources: ['status'],
    strategy: customResourceStrategy,
  },
  {
    // Stored at v1beta1, as its CRD says; served at v1 too.
    group: 'gateway.networking.k8s.io',
    version: 'v1beta1',
    kind: 'ReferenceGrant',
    plural: 'referencegrants',
    namespaced: true,
    shortNames: ['refgrant'],
    categories: ['gateway-api'],
    strategy: customResourceStrategy,
  },
  {
    group: 'authentication.k8s.io',
    version: 'v1',
    kind: 'TokenReview',
    plural: 'tokenreviews',
    namespaced: false,
    review: true,
  },
  {
    group: 'authorization.k8s.io',
    version: 'v1',
    kind: 'SubjectAccessReview',
    plural: 'subjectaccessreviews',
    namespaced: false,
    review: true,
  },
  {
    group: 'authorization.k8s.io',
    version: 'v1',
    kind: 'SelfSubjectAccessReview',
    plural: 'selfsubjectaccessreviews',
    namespaced: false,
    review: true,
  },
  {
    group: 'authentication.k8s.io',
    version: 'v1',
    kind: 'SelfSubjectReview',
    plural: 'selfsubjectreviews',
    namespaced: false,
    review: true,
  },
  {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    kind: 'ClusterRole',
    plural: 'clusterroles',
    namespaced: false,
    strategy: clusterRoleStrategy,
  },
  {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    kind: 'ClusterRoleBinding',
    plural: 'clusterrolebindings',
    namespaced: false,
    strategy: clusterRoleBindingStrategy,
  },
  {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    kind: 'Role',
    plural: 'roles',
    namespaced: true,
    strategy: roleStrategy,
  },
  {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    kind: 'RoleBinding',
    plural: 'rolebindings',
    namespaced: true,
    strategy: roleBindingStrategy,
  },
  {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    kind: 'CustomResourceDefinition',
    plural: 'customresourcedefinitions',
    namespaced: false,
    shortNames: ['crd', 'crds'],
    categories: ['api-extensions'],
    subresources: ['status'],
    strategy: customResourceDefinitionStrategy,
  },
  {
    group: 'policy',
    version: 'v1',
    kind: 'PodDisruptionBudget',
    plural: 'poddisruptionbudgets',
    namespaced: true,
    shortNames: ['pdb'],
    subresources: ['status'],
    strategy: podDisruptionBudgetStrategy,
  },
  {
    group: 'autoscaling',
    version: 'v2',
    kind: 'HorizontalPodAutoscaler',
    plural: 'horizontalpodautoscalers',
    namespaced: true,
    shortNames: ['hpa'],
    categories: ['all'],
    subresources: ['status'],
    strategy: horizontalPodAutoscalerStrategy,
  },
];

const storedKinds = ENTRIES.map((e) =>
  Object.freeze({
    group: e.group,
    version: e.version,
    kind: e.kind,
    plural: e.plural,
    singular: e.kind.toLowerCase(),
    namespaced: e.namespaced,
    shortNames: Object.freeze(e.shortNames ?? []),
    categories: Object.freeze(e.categories ?? []),
    subresources: Object.freeze(e.subresources ?? []),
    review: e.review ?? false,
    strategy: e.strategy,
  }),
);

/**
 * The other versions a built-in custom kind's CRD serves (Istio's networking kinds at v1alpha3, v1beta1 and v1; the
 * Gateway API's at v1beta1 too), each one more entry stored as the built-in one, its conversion `None` as their CRDs
 * declare it (`version-conversion.ts`): an object written at any version is the same stored object, read at any
 * version.
 */
const otherServedVersions = storedKinds.flatMap((k) =>
  (customResourceSource(k.group, k.kind)?.versions ?? [])
    .filter((v) => v.served && v.name !== k.version)
    .map((v) => Object.freeze({ ...k, version: v.name, storageVersion: k.version })),
);

/** Every kind the embedded API server serves, in discovery order (a group's stored version first: its preferred one). */
export const KINDS: readonly KindInfo[] = Object.freeze([...storedKinds, ...otherServedVersions]);

/** `apiVersion` as objects of this kind carry it: `v1`, `apps/v1`. */
export function apiVersionOf(k: KindInfo): string {
  return k.group === '' ? k.version : `${k.group}/${k.version}`;
}

/** Kinds served from stored CustomResourceDefinitions, after the built-in ones (see `setDefinedKinds`). */
let served: readonly KindInfo[] = KINDS;
let servedRevision = 0;

/** Every kind served now: the built-in ones, then those of stored CustomResourceDefinitions. */
export function servedKinds(): readonly KindInfo[] {
  return served;
}

/** Counts changes of `servedKinds()`, for what is built from it (the OpenAPI documents). */
export function servedKindsRevision(): number {
  return servedRevision;
}

/**
 * Serves these kinds beside the built-in ones, in place of those set before (the custom resource definitions
 * controller sets them from the stored CRDs). A kind the server has built in is never replaced.
 */
export function setDefinedKinds(kinds: readonly KindInfo[]): void {
  const added = kinds.filter((k) => !KINDS.some((b) => b.group === k.group && b.plural === k.plural));
  served = Object.freeze([...KINDS, ...added]);
  servedRevision++;
}

/** The kind serving `plural` in `group`/`version`, if any. */
export function findKind(group: string, version: string, plural: string): KindInfo | undefined {
  return served.find((k) => k.group === group && k.version === version && k.plural === plural);
}

/** The kind an object names with its `apiVersion` and `kind`, if served. */
export function kindOfObject(apiVersion: string, kind: string): KindInfo | undefined {
  return served.find((k) => apiVersionOf(k) === apiVersion && k.kind === kind);
}

/**
 * The store key of one object, after the API server's etcd layout (`/registry/<resource>/<namespace>/<name>`):
 * `/registry/<group or core>/<plural>/<namespace>/<name>`, or without the namespace for cluster-scoped kinds.
 */
export function storageKey(k: KindInfo, namespace: string | undefined, name: string): string {
  return `${storagePrefix(k, namespace)}${name}`;
}

/** The key prefix listing every object of a kind, or of a kind in one namespace. */
export function storagePrefix(k: KindInfo, namespace?: string): string {
  const base = `/registry/${k.group === '' ? 'core' : k.group}/${k.plural}/`;
  return k.namespaced && namespace !== undefined ? `${base}${namespace}/` : base;
}
