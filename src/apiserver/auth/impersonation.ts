/**
 * `Impersonate-User`, `Impersonate-Group` and `Impersonate-Uid` (kubectl `--as`, `--as-group`), after
 * k8s.io/apiserver pkg/endpoints/filters/impersonation.go: the caller must be allowed the `impersonate` verb on
 * each thing it claims (users, serviceaccounts in their namespace, groups, uids), and the request then runs as
 * the impersonated user: its groups plus `system:authenticated`, or a service account's own groups when none are
 * given. Extra fields (`Impersonate-Extra-*`) are refused rather than silently dropped.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { ApiError } from '../api-error.js';
import { forbidden, type Attributes, type Authorizer } from './authorizer.js';
import {
  ALL_SERVICE_ACCOUNTS_GROUP,
  SYSTEM_AUTHENTICATED,
  parseServiceAccountUsername,
  type UserInfo,
} from './user-info.js';

/** A header's values: Node gives a repeated header as an array, a single one as a string. */
function list(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** The user a request acts as: `user` itself, or whom it impersonates once `user` may. Throws 403 otherwise. */
export function impersonatedUser(user: UserInfo, headers: IncomingHttpHeaders, authorizer: Authorizer): UserInfo {
  const name = headers['impersonate-user'];
  const groups = list(headers['impersonate-group']);
  const uid = headers['impersonate-uid'];
  const extra = Object.keys(headers).filter((h) => h.startsWith('impersonate-extra-'));
  if (name === undefined && groups.length === 0 && uid === undefined && extra.length === 0) return user;
  if (typeof name !== 'string' || name === '')
    throw new ApiError(
      'BadRequest',
      'requested impersonation of groups, uid or extra fields without impersonating a user',
    );
  if (extra.length > 0)
    throw new ApiError(
      'BadRequest',
      `impersonating extra fields (${extra.join(', ')}) is not supported by this API server`,
    );
  const sa = parseServiceAccountUsername(name);
  const checks: Attributes[] = [
    sa !== undefined
      ? { user, verb: 'impersonate', apiGroup: '', resource: 'serviceaccounts', namespace: sa.namespace, name: sa.name }
      : { user, verb: 'impersonate', apiGroup: '', resource: 'users', name },
    ...groups.map((g): Attributes => ({ user, verb: 'impersonate', apiGroup: '', resource: 'groups', name: g })),
    ...(typeof uid === 'string'
      ? [{ user, verb: 'impersonate', apiGroup: 'authentication.k8s.io', resource: 'uids', name: uid }]
      : []),
  ];
  for (const a of checks) {
    const d = authorizer.authorize(a);
    if (!d.allowed) throw forbidden(a, d.reason);
  }
  const impersonatedGroups =
    groups.length > 0 || sa === undefined
      ? groups
      : [ALL_SERVICE_ACCOUNTS_GROUP, `${ALL_SERVICE_ACCOUNTS_GROUP}:${sa.namespace}`];
  return {
    username: name,
    ...(typeof uid === 'string' ? { uid } : {}),
    groups: impersonatedGroups.includes(SYSTEM_AUTHENTICATED)
      ? impersonatedGroups
      : [...impersonatedGroups, SYSTEM_AUTHENTICATED],
  };
}
