/**
 * Authorization for the embedded API server: `system:masters` may do anything (k8s.io/apiserver
 * pkg/authorization/authorizerfactory privileged groups), everyone else what the cluster's RBAC objects grant,
 * as Kubernetes' RBAC authorizer decides (kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go over the cache of
 * `src/apiserver/rbac/rbac-cache.ts`). Nothing is ever denied explicitly: what no rule allows is not allowed, and
 * the reason then names the roles that bindings refer to but that do not exist. The 403 message is
 * kube-apiserver's (k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go `forbiddenMessage`,
 * apimachinery `NewForbidden`).
 */
import { ApiError, type StatusDetails } from '../api-error.js';
import type { RbacCache, RuleSource } from '../rbac/rbac-cache.js';
import { ruleAllows } from '../rbac/rule-evaluation.js';
import { SYSTEM_MASTERS, type UserInfo } from './user-info.js';

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
  /** What allowed it, or why nothing could, worded as Kubernetes' RBAC authorizer words it; '' otherwise. */
  readonly reason: string;
}

/** Decides requests; the API server has one, over its RBAC cache. */
export interface Authorizer {
  authorize(a: Attributes): Decision;
}

export const isResourceRequest = (a: Attributes): a is ResourceAttributes => 'resource' in a;

/** rbac.go's description of what allowed a request (rule.go `clusterRoleBindingDescriber`, `roleBindingDescriber`). */
function describe({ binding: b, subject: s }: RuleSource): string {
  const subject =
    s.kind === 'ServiceAccount'
      ? `${s.kind} ${JSON.stringify(`${s.name}/${s.namespace !== '' ? s.namespace : b.namespace}`)}`
      : `${s.kind} ${JSON.stringify(s.name)}`;
  const name = b.kind === 'RoleBinding' ? `${b.name}/${b.namespace}` : b.name;
  return `RBAC: allowed by ${b.kind} ${JSON.stringify(name)} of ${b.roleRef.kind} ${JSON.stringify(b.roleRef.name)} to ${subject}`;
}

/** Go's `utilerrors.NewAggregate(errs).Error()`: one error as itself, more as `[a, b]`. */
export function aggregateErrors(errors: readonly string[]): string {
  return errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`;
}

export class RbacAuthorizer implements Authorizer {
  constructor(private readonly rbac: RbacCache) {}

  authorize(a: Attributes): Decision {
    if (a.user.groups.includes(SYSTEM_MASTERS)) return { allowed: true, reason: '' };
    let allowedBy: RuleSource | undefined;
    const missing: string[] = [];
    this.rbac.visitRulesFor(
      a.user,
      isResourceRequest(a) ? (a.namespace ?? '') : '',
      (source, rule) => {
        if (!ruleAllows(a, rule)) return true;
        allowedBy = source;
        return false;
      },
      // The informers' lister names a missing role by its singular resource.
      (m) => missing.push(`${m.kind.toLowerCase()}.rbac.authorization.k8s.io ${JSON.stringify(m.name)} not found`),
    );
    if (allowedBy !== undefined) return { allowed: true, reason: describe(allowedBy) };
    return { allowed: false, reason: missing.length > 0 ? `RBAC: ${aggregateErrors(missing)}` : '' };
  }
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
