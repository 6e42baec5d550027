/**
 * What stands in for a policy that was refused (its document invalid, or the Kubernetes API refused it) and has no
 * last good version: it cannot be honoured and its selector cannot be trusted, so it denies every workload of its
 * namespace (of the mesh, in the root namespace: an AuthorizationPolicy without a selector there is GLOBAL). A
 * refused PeerAuthentication stands in as STRICT for its namespace. Fail closed: a policy we cannot read never
 * opens anything.
 */
import type { Logger } from '../../lib/log.js';
import type { RejectedObject, ResourceOf } from './manifest-dir.js';

/** The stand-in for `r` (read from `file`, empty for an API object), or undefined for a kind that has none. */
export function failClosedStandIn(
  r: RejectedObject,
  file: string,
): ResourceOf<'AuthorizationPolicy'> | ResourceOf<'PeerAuthentication'> | undefined {
  const object = {
    apiVersion: 'security.istio.io/v1',
    metadata: { name: r.name, namespace: r.namespace, labels: {}, annotations: {} },
    status: {},
    source: r.source,
    file,
  };
  if (r.kind === 'AuthorizationPolicy') return { ...object, kind: r.kind, spec: { action: 'DENY', rules: [{}] } };
  if (r.kind === 'PeerAuthentication') return { ...object, kind: r.kind, spec: { mtls: { mode: 'STRICT' } } };
  return undefined;
}

/** Says that `r` is served as its stand-in, and what that denies. */
export function warnStandIn(log: Logger, r: RejectedObject): void {
  log.warn(
    `${r.source}: ${r.key} has no good version; it stands in as ${r.kind === 'PeerAuthentication' ? 'STRICT' : 'deny-all'} for its namespace until fixed`,
  );
}
