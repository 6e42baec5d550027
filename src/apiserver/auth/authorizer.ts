/**
 * Authorization for the embedded API server: `system:masters` may do anything (k8s.io/apiserver
 * pkg/authorization/authorizerfactory privileged groups), everyone else gets what {@link RBAC_POLICY} binds to
 * them, matched as Kubernetes' RBAC authorizer matches (kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go and
 * pkg/apis/rbac/v1/evaluation_helpers.go: `*` wildcards, `resource/subresource`, resourceNames, non-resource URL
 * prefixes, ServiceAccount subjects by username, RoleBindings only in their namespace). Nothing is ever denied
 * explicitly: what no rule allows is not allowed. The 403 message is kube-apiserver's
 * (k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go `forbiddenMessage`, apimachinery
 * `NewForbidden`).
 */
import { ApiError, type StatusDetails } from '../api-error.js';
import { RBAC_POLICY, type PolicyBinding, type PolicyRule, type Subject } from './rbac-policy.js';
import { SYSTEM_MASTERS, parseServiceAccountUsername, type UserInfo } from './user-info.js';

/** A request on an API resource. */
export interface ResourceAttributes {
  readonly user: UserInfo;
  /** get, list, watch, create, update, patch, delete, deletecollection. */
  readonly verb: string;
  /** '' for the core group. */
  readonly apiGroup: string;
  readonly resource: string;
  readonly subresource?: string;
  /** Absent or '' for cluster-scoped requests. */
  readonly namespace?: string;
  readonly name?: string;
}

/** A request on a path outside the resource API (`/version`, `/healthz`, `/apis`). */
export interface NonResourceAttributes {
  readonly user: UserInfo;
  /** The lower-case HTTP method: get, post, put, patch, delete, head. */
  readonly verb: string;
  readonly path: string;
}

export type Attributes = ResourceAttributes | NonResourceAttributes;

export interface Decision {
  readonly allowed: boolean;
  /** Which binding allowed it, worded as Kubernetes' RBAC authorizer words it; '' otherwise. */
  readonly reason: string;
}

export const isResourceRequest = (a: Attributes): a is ResourceAttributes => 'resource' in a;

const has = (list: readonly string[] | undefined, v: string): boolean =>
  list !== undefined && (list.includes('*') || list.includes(v));

function ruleAllows(a: Attributes, rule: PolicyRule): boolean {
  if (!has(rule.verbs, a.verb)) return false;
  if (!isResourceRequest(a)) {
    return (rule.nonResourceURLs ?? []).some(
      (u) => u === '*' || u === a.path || (u.endsWith('*') && a.path.startsWith(u.replace(/\*+$/, ''))),
    );
  }
  if (!has(rule.apiGroups, a.apiGroup)) return false;
  const sub = a.subresource ?? '';
  const combined = sub === '' ? a.resource : `${a.resource}/${sub}`;
  const resourceOk = (rule.resources ?? []).some(
    (r) => r === '*' || r === combined || (sub !== '' && r === `*/${sub}`),
  );
  if (!resourceOk) return false;
  return (
    rule.resourceNames === undefined || rule.resourceNames.length === 0 || rule.resourceNames.includes(a.name ?? '')
  );
}

function appliesTo(user: UserInfo, s: Subject, bindingNamespace: string): boolean {
  switch (s.kind) {
    case 'User':
      return user.username === s.name;
    case 'Group':
      return user.groups.includes(s.name);
    case 'ServiceAccount': {
      const who = parseServiceAccountUsername(user.username);
      return who !== undefined && who.name === s.name && who.namespace === (s.namespace ?? bindingNamespace);
    }
  }
}

/** rbac.go's description of what allowed a request. */
function describe(b: PolicyBinding, s: Subject): string {
  const ns = b.binding.namespace ?? '';
  const subject = s.kind === 'ServiceAccount' ? `${s.kind} "${s.name}/${s.namespace ?? ns}"` : `${s.kind} "${s.name}"`;
  const name = b.binding.kind === 'RoleBinding' ? `${b.binding.name}/${ns}` : b.binding.name;
  return `RBAC: allowed by ${b.binding.kind} "${name}" of ${b.role.kind} "${b.role.name}" to ${subject}`;
}

/** Whether `a` is allowed, and by what. */
export function authorize(a: Attributes, policy: readonly PolicyBinding[] = RBAC_POLICY): Decision {
  if (a.user.groups.includes(SYSTEM_MASTERS)) return { allowed: true, reason: '' };
  const namespace = isResourceRequest(a) ? (a.namespace ?? '') : '';
  for (const b of policy) {
    // A RoleBinding grants only within its namespace; non-resource URLs are never namespaced.
    if (b.binding.kind === 'RoleBinding' && (namespace === '' || namespace !== b.binding.namespace)) continue;
    const subject = b.subjects.find((s) => appliesTo(a.user, s, b.binding.namespace ?? ''));
    if (subject === undefined) continue;
    if (b.rules.some((r) => ruleAllows(a, r))) return { allowed: true, reason: describe(b, subject) };
  }
  return { allowed: false, reason: '' };
}

/** kube-apiserver's sentence for a refused request: `User "u" cannot list resource "pods" in API group "" in the namespace "default"`. */
export function forbiddenMessage(a: Attributes): string {
  const user = a.user.username;
  if (!isResourceRequest(a)) return `User "${user}" cannot ${a.verb} path "${a.path}"`;
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  if (a.namespace)
    return `User "${user}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" in the namespace "${a.namespace}"`;
  return `User "${user}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" at the cluster scope`;
}

/**
 * The 403 for a refused request, as kube-apiserver serves it: `pods is forbidden: User ...`, `pods "x" is
 * forbidden: ...` with a name, `forbidden: User ... cannot get path "/x"` for a non-resource request, with the
 * authorizer's reason appended when there is one.
 */
export function forbidden(a: Attributes, reason = ''): ApiError {
  const why = reason === '' ? forbiddenMessage(a) : `${forbiddenMessage(a)}: ${reason}`;
  if (!isResourceRequest(a)) return new ApiError('Forbidden', `forbidden: ${why}`, {});
  const qualified = a.apiGroup === '' ? a.resource : `${a.resource}.${a.apiGroup}`;
  const details: StatusDetails = {
    ...(a.name ? { name: a.name } : {}),
    ...(a.apiGroup !== '' ? { group: a.apiGroup } : {}),
    kind: a.resource,
  };
  return new ApiError(
    'Forbidden',
    a.name ? `${qualified} "${a.name}" is forbidden: ${why}` : `${qualified} is forbidden: ${why}`,
    details,
  );
}
