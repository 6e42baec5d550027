/**
 * The kinds an install writes, prunes or removes, with their REST paths. istioctl prunes and uninstalls by listing
 * a fixed set of kinds (istio operator/pkg/uninstall/prune.go NamespacedResources, ClusterResources and, for
 * `--purge`, AllClusterResources); amesh lists the same, and the NetworkPolicies and ResourceQuotas its charts
 * render too.
 */
import { MeshError } from '../lib/errors.js';

export interface InstallKind {
  readonly apiVersion: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

const k = (apiVersion: string, kind: string, plural: string, namespaced: boolean): InstallKind => ({
  apiVersion,
  kind,
  plural,
  namespaced,
});

const DEPLOYMENT = k('apps/v1', 'Deployment', 'deployments', true);
const DAEMON_SET = k('apps/v1', 'DaemonSet', 'daemonsets', true);
const SERVICE = k('v1', 'Service', 'services', true);
const CONFIG_MAP = k('v1', 'ConfigMap', 'configmaps', true);
const POD = k('v1', 'Pod', 'pods', true);
const SECRET = k('v1', 'Secret', 'secrets', true);
const SERVICE_ACCOUNT = k('v1', 'ServiceAccount', 'serviceaccounts', true);
const ROLE_BINDING = k('rbac.authorization.k8s.io/v1', 'RoleBinding', 'rolebindings', true);
const ROLE = k('rbac.authorization.k8s.io/v1', 'Role', 'roles', true);
const PDB = k('policy/v1', 'PodDisruptionBudget', 'poddisruptionbudgets', true);
const HPA = k('autoscaling/v2', 'HorizontalPodAutoscaler', 'horizontalpodautoscalers', true);
const ENVOY_FILTER = k('networking.istio.io/v1alpha3', 'EnvoyFilter', 'envoyfilters', true);
const NETWORK_POLICY = k('networking.k8s.io/v1', 'NetworkPolicy', 'networkpolicies', true);
const RESOURCE_QUOTA = k('v1', 'ResourceQuota', 'resourcequotas', true);
const MWC = k(
  'admissionregistration.k8s.io/v1',
  'MutatingWebhookConfiguration',
  'mutatingwebhookconfigurations',
  false,
);
const VWC = k(
  'admissionregistration.k8s.io/v1',
  'ValidatingWebhookConfiguration',
  'validatingwebhookconfigurations',
  false,
);
const CLUSTER_ROLE = k('rbac.authorization.k8s.io/v1', 'ClusterRole', 'clusterroles', false);
const CLUSTER_ROLE_BINDING = k('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', 'clusterrolebindings', false);
const CRD = k('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'customresourcedefinitions', false);
const NAD = k('k8s.cni.cncf.io/v1', 'NetworkAttachmentDefinition', 'network-attachment-definitions', true);
const NAMESPACE = k('v1', 'Namespace', 'namespaces', false);

/** Namespaced kinds istioctl prunes and uninstalls, in its order. */
export const NAMESPACED_KINDS: readonly InstallKind[] = [
  DEPLOYMENT,
  DAEMON_SET,
  SERVICE,
  CONFIG_MAP,
  POD,
  SECRET,
  SERVICE_ACCOUNT,
  ROLE_BINDING,
  ROLE,
  PDB,
  HPA,
  ENVOY_FILTER,
  NETWORK_POLICY,
  RESOURCE_QUOTA,
];
/** Cluster-scoped kinds a prune or a plain uninstall removes (never CRDs: that would delete users' config). */
export const CLUSTER_KINDS: readonly InstallKind[] = [MWC, VWC, CLUSTER_ROLE, CLUSTER_ROLE_BINDING];
/** What `--purge` also removes. */
export const PURGE_KINDS: readonly InstallKind[] = [...CLUSTER_KINDS, CRD, NAD];

const ALL = [...NAMESPACED_KINDS, ...PURGE_KINDS, NAMESPACE];

/** The kind of a rendered object; every kind the charts render is known here. */
export function installKind(apiVersion: string, kind: string): InstallKind {
  const found = ALL.find((x) => x.apiVersion === apiVersion && x.kind === kind);
  if (found === undefined)
    throw new MeshError('INSTALL_ERR_APPLY', `amesh does not know how to apply ${apiVersion} ${kind}`);
  return found;
}

/** The REST path of a kind's collection (in `namespace`, or across all for a list without one), or of one object. */
export function kindPath(k: InstallKind, namespace?: string, name?: string): string {
  const root = k.apiVersion.includes('/') ? `/apis/${k.apiVersion}` : `/api/${k.apiVersion}`;
  const ns = k.namespaced && namespace !== undefined ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${root}${ns}/${k.plural}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
}

export const NAMESPACE_KIND = NAMESPACE;
export const CRD_KIND = CRD;
export const DEPLOYMENT_KIND = DEPLOYMENT;
export const REPLICA_SET_KIND = k('apps/v1', 'ReplicaSet', 'replicasets', true);
export const POD_KIND = POD;
