/**
 * Who a request is from, as Kubernetes names users: k8s.io/apiserver pkg/authentication/user/user.go (the
 * well-known groups) and pkg/authentication/serviceaccount/util.go (service-account usernames, groups and the
 * `extra` keys a bound token adds).
 */

/** An authenticated user (authentication.k8s.io/v1 UserInfo). */
export interface UserInfo {
  readonly username: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** Members may do anything (user.SystemPrivilegedGroup). */
export const SYSTEM_MASTERS = 'system:masters';
/** Every authenticated user is in it (user.AllAuthenticated). */
export const SYSTEM_AUTHENTICATED = 'system:authenticated';
/** Every service account is in it (serviceaccount.AllServiceAccountsGroup). */
export const ALL_SERVICE_ACCOUNTS_GROUP = 'system:serviceaccounts';

const USERNAME_PREFIX = 'system:serviceaccount:';

/** The `extra` keys of a service-account user (serviceaccount/util.go). */
export const EXTRA_KEYS = {
  credentialId: 'authentication.kubernetes.io/credential-id',
  podName: 'authentication.kubernetes.io/pod-name',
  podUid: 'authentication.kubernetes.io/pod-uid',
  nodeName: 'authentication.kubernetes.io/node-name',
  nodeUid: 'authentication.kubernetes.io/node-uid',
} as const;

/** `system:serviceaccount:NS:NAME`. */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `${USERNAME_PREFIX}${namespace}:${name}`;
}

/** The namespace and name of a service-account username, or undefined for any other user. */
export function parseServiceAccountUsername(username: string): { namespace: string; name: string } | undefined {
  if (!username.startsWith(USERNAME_PREFIX)) return undefined;
  const parts = username.slice(USERNAME_PREFIX.length).split(':');
  if (parts.length !== 2 || parts[0] === '' || parts[1] === '') return undefined;
  return { namespace: parts[0]!, name: parts[1]! };
}

/** What a validated service-account token says about its holder (serviceaccount.ServiceAccountInfo). */
export interface ServiceAccountInfo {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly podName?: string | undefined;
  readonly podUid?: string | undefined;
  readonly nodeName?: string | undefined;
  readonly nodeUid?: string | undefined;
  /** The token's `jti`. */
  readonly tokenId?: string | undefined;
}

/**
 * The user a service-account token authenticates as (ServiceAccountInfo.UserInfo), with `system:authenticated`
 * added as the API server's authenticated-group adder does. Pod keys only when both the pod's name and uid are
 * known; the node uid only with a node name.
 */
export function serviceAccountUser(sa: ServiceAccountInfo): UserInfo {
  const extra: Record<string, string[]> = {};
  if (sa.podName && sa.podUid) {
    extra[EXTRA_KEYS.podName] = [sa.podName];
    extra[EXTRA_KEYS.podUid] = [sa.podUid];
  }
  if (sa.tokenId) extra[EXTRA_KEYS.credentialId] = [`JTI=${sa.tokenId}`];
  if (sa.nodeName) {
    extra[EXTRA_KEYS.nodeName] = [sa.nodeName];
    if (sa.nodeUid) extra[EXTRA_KEYS.nodeUid] = [sa.nodeUid];
  }
  return {
    username: serviceAccountUsername(sa.namespace, sa.name),
    uid: sa.uid,
    groups: [ALL_SERVICE_ACCOUNTS_GROUP, `${ALL_SERVICE_ACCOUNTS_GROUP}:${sa.namespace}`, SYSTEM_AUTHENTICATED],
    ...(Object.keys(extra).length > 0 ? { extra } : {}),
  };
}
