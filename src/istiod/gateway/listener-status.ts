/**
 * The `status.listeners` istiod writes on an ingress Gateway, as istio `pilot/pkg/config/kube/gateway/conversion.go`
 * `buildListener` reports each listener: Accepted, Programmed, Conflicted (False) and ResolvedRefs, the route kinds
 * it supports and how many routes attached to it.
 * - A listener whose certificates cannot be used (no Secret, a Secret without a key pair, a reference to another
 *   namespace no ReferenceGrant opens, a kind other than Secret) is ResolvedRefs False (InvalidCertificateRef,
 *   RefNotPermitted) and Programmed False (`Bad TLS configuration`); it stays usable while one certificate is.
 * - A listener whose clients cannot be verified as the Gateway's frontend TLS asks (several caCertificateRefs, a
 *   kind other than ConfigMap or Secret, another namespace without a ReferenceGrant) is reported the same way
 *   (InvalidCACertificateRef, RefNotPermitted), and is not served at all.
 * - A protocol or TLS mode amesh's gateway does not serve (HTTPS passed through) is reported not Accepted
 *   (UnsupportedProtocol), rather than accepted and then silently not served.
 * - attachedRoutes counts the routes of every kind given (HTTPRoutes, GRPCRoutes, TLSRoutes, TCPRoutes) with a
 *   parentRef that attaches to the listener, as istio `pilot/pkg/config/kube/gateway/route_collections.go` counts
 *   route attachments.
 */
import {
  attach,
  certificateRef,
  clientValidation,
  refersToGateway,
  routeKinds,
  terminatesTls,
  type GatewayShape,
  type ListenerShape,
  type RefShape,
  type RouteShape,
  unservedListener,
} from '../model/gateway-listeners.js';
import { GATEWAY_API_GROUP, type GrantShape } from '../model/reference-grants.js';
import { extractCertInfo, keyPairProblem } from '../credentials/cert-info.js';
import type { Condition } from './status-conditions.js';

export interface ListenerStatus {
  readonly name: string;
  readonly supportedKinds: readonly { readonly group: string; readonly kind: string }[];
  readonly attachedRoutes: number;
  readonly conditions: readonly Condition[];
}

/** A Secret's `data`, by namespace and name; undefined when there is none. */
export type SecretLookup = (namespace: string, name: string) => Readonly<Record<string, string>> | undefined;

/** As istio `secretObjectReferenceString` writes a reference: `group/kind/name.namespace`. */
const refText = (r: RefShape): string => `${r.group ?? ''}/${r.kind ?? ''}/${r.name ?? ''}.${r.namespace ?? ''}`;

/** The listener's TLS problem, if none of its certificates can be used. */
function tlsProblem(
  l: ListenerShape,
  gw: GatewayShape,
  grants: readonly GrantShape[],
  secret: SecretLookup,
): { reason: string; message: string } | undefined {
  if (!terminatesTls(l)) return undefined;
  const validation = clientValidation(gw, l.port, grants);
  if (validation?.ok === false) return { reason: validation.reason, message: validation.message };
  const problems: { reason: string; message: string }[] = [];
  for (const ref of l.tls?.certificateRefs ?? []) {
    const c = certificateRef(ref, gw, grants);
    if (!c.ok) {
      problems.push(c);
      continue;
    }
    const data = secret(c.namespace, c.name);
    const info = data === undefined ? `secret ${c.namespace}/${c.name} not found` : extractCertInfo(data);
    const why = typeof info === 'string' ? info : keyPairProblem(info);
    if (why === undefined) return undefined;
    problems.push({
      reason: 'InvalidCertificateRef',
      message:
        typeof info === 'string'
          ? `invalid certificate reference ${refText(ref)}, ${why}`
          : `invalid certificate reference ${refText(ref)}, the certificate is malformed: ${why}`,
    });
  }
  if (problems.length === 0)
    return {
      reason: 'InvalidCertificateRef',
      message: `a ${l.protocol} listener in Terminate mode needs a certificateRef`,
    };
  return { reason: problems[0]!.reason, message: problems.map((p) => p.message).join('; ') };
}

export function listenerStatuses(
  gw: GatewayShape,
  routes: readonly RouteShape[],
  grants: readonly GrantShape[],
  namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>>,
  secret: SecretLookup,
): ListenerStatus[] {
  return gw.listeners.map((l) => {
    const ok = (type: string, reason: string, status: 'True' | 'False' = 'True'): Condition => ({
      type,
      status,
      reason,
      message: 'No errors found',
    });
    let accepted = ok('Accepted', 'Accepted');
    let programmed = ok('Programmed', 'Programmed');
    let resolved = ok('ResolvedRefs', 'ResolvedRefs');
    const unserved = unservedListener(l);
    if (unserved !== undefined) {
      accepted = { type: 'Accepted', status: 'False', reason: 'UnsupportedProtocol', message: unserved };
      programmed = { type: 'Programmed', status: 'False', reason: 'Invalid', message: 'Unsupported protocol' };
    }
    const tls = tlsProblem(l, gw, grants, secret);
    if (tls !== undefined) {
      resolved = { type: 'ResolvedRefs', status: 'False', ...tls };
      programmed = { type: 'Programmed', status: 'False', reason: 'Invalid', message: 'Bad TLS configuration' };
      if (tls.reason === 'RefNotPermitted')
        accepted = { type: 'Accepted', status: 'False', reason: 'NoValidCACertificate', message: tls.message };
    }
    const kinds =
      l.allowedKinds.length > 0
        ? l.allowedKinds.filter((k) => routeKinds(l).includes(k.kind)).map((k) => k.kind)
        : routeKinds(l);
    const attachedRoutes = routes.filter((r) =>
      r.parentRefs.some(
        (ref) => refersToGateway(ref, gw, r.namespace) && attach(r, ref, gw, l, namespaceLabels).attached,
      ),
    ).length;
    return {
      name: l.name,
      supportedKinds: kinds.map((kind) => ({ group: GATEWAY_API_GROUP, kind })),
      attachedRoutes,
      conditions: [
        accepted,
        programmed,
        { type: 'Conflicted', status: 'False', reason: 'NoConflicts', message: 'No errors found' },
        resolved,
      ],
    };
  });
}
