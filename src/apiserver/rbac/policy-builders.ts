/**
 * Builders for the bootstrap policy's objects, after kubernetes pkg/apis/rbac/v1/helpers.go (`NewRule`,
 * `NewClusterBinding`, `NewRoleBinding`) and bootstrappolicy's labelling: every list of a rule sorted, as
 * `RuleOrDie` sorts it; every object labelled `kubernetes.io/bootstrapping: rbac-defaults` and annotated
 * `rbac.authorization.kubernetes.io/autoupdate: "true"`, which the API server's reconciliation honours.
 */
import type { KubeObject } from '../kube-object.js';

export const RBAC_API_VERSION = 'rbac.authorization.k8s.io/v1';
const RBAC_GROUP = 'rbac.authorization.k8s.io';
/** The annotation whose value "false" keeps reconciliation away from an object. */
export const AUTO_UPDATE_ANNOTATION = 'rbac.authorization.kubernetes.io/autoupdate';
export const BOOTSTRAP_LABELS: Readonly<Record<string, string>> = { 'kubernetes.io/bootstrapping': 'rbac-defaults' };

export type RuleJson = Record<string, string[]>;
export type SubjectJson = Record<string, string>;

export const READ = ['get', 'list', 'watch'];
export const READ_WRITE = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];
export const WRITE = ['create', 'update', 'patch', 'delete', 'deletecollection'];
/** `eventsRule()`: what every controller may do with Events. */
export const EVENTS_RULE: RuleJson = rule(['create', 'update', 'patch'], ['', 'events.k8s.io'], ['events']);

function sorted(l: readonly string[]): string[] {
  return [...new Set(l)].sort();
}

export function rule(
  verbs: readonly string[],
  apiGroups: readonly string[],
  resources: readonly string[],
  resourceNames: readonly string[] = [],
): RuleJson {
  return {
    verbs: sorted(verbs),
    apiGroups: sorted(apiGroups),
    resources: sorted(resources),
    ...(resourceNames.length > 0 ? { resourceNames: sorted(resourceNames) } : {}),
  };
}

export function urlRule(verbs: readonly string[], urls: readonly string[]): RuleJson {
  return { verbs: sorted(verbs), nonResourceURLs: sorted(urls) };
}

function metadata(name: string, namespace?: string, labels: Record<string, string> = {}): KubeObject['metadata'] {
  return {
    name,
    ...(namespace !== undefined ? { namespace } : {}),
    labels: { ...BOOTSTRAP_LABELS, ...labels },
    annotations: { [AUTO_UPDATE_ANNOTATION]: 'true' },
  };
}

export function clusterRole(name: string, rules: readonly RuleJson[], labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: RBAC_API_VERSION,
    kind: 'ClusterRole',
    metadata: metadata(name, undefined, labels),
    rules: [...rules],
  };
}

/** A ClusterRole whose rules the aggregation controller gathers from the ClusterRoles labelled `selectorLabel: "true"`. */
export function aggregatedClusterRole(
  name: string,
  selectorLabel: string,
  labels: Record<string, string> = {},
): KubeObject {
  return {
    apiVersion: RBAC_API_VERSION,
    kind: 'ClusterRole',
    metadata: metadata(name, undefined, labels),
    aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [selectorLabel]: 'true' } }] },
    rules: null,
  };
}

export function role(namespace: string, name: string, rules: readonly RuleJson[]): KubeObject {
  return { apiVersion: RBAC_API_VERSION, kind: 'Role', metadata: metadata(name, namespace), rules: [...rules] };
}

export const group = (name: string): SubjectJson => ({ kind: 'Group', apiGroup: RBAC_GROUP, name });
export const user = (name: string): SubjectJson => ({ kind: 'User', apiGroup: RBAC_GROUP, name });
export const serviceAccount = (namespace: string, name: string): SubjectJson => ({
  kind: 'ServiceAccount',
  name,
  namespace,
});

/** A ClusterRoleBinding named after its ClusterRole. */
export function clusterRoleBinding(roleName: string, subjects: readonly SubjectJson[]): KubeObject {
  return {
    apiVersion: RBAC_API_VERSION,
    kind: 'ClusterRoleBinding',
    metadata: metadata(roleName),
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: roleName },
    ...(subjects.length > 0 ? { subjects: [...subjects] } : {}),
  };
}

export function roleBinding(
  namespace: string,
  name: string,
  roleName: string,
  subjects: readonly SubjectJson[],
): KubeObject {
  return {
    apiVersion: RBAC_API_VERSION,
    kind: 'RoleBinding',
    metadata: metadata(name, namespace),
    roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name: roleName },
    subjects: [...subjects],
  };
}
