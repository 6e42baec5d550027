/**
 * A route's ResolvedRefs condition, as istio `pilot/pkg/config/kube/gateway/conversion.go` `buildDestination` judges
 * each backendRef of an HTTPRoute, GRPCRoute, TLSRoute or TCPRoute: a Service (`InvalidKind` otherwise), of the
 * route's namespace or of one whose ReferenceGrant lets that kind of route of its namespace refer to it
 * (`RefNotPermitted`), that exists (`BackendNotFound`). The first backendRef that fails gives the condition;
 * Istio reports the last one that fails.
 */
import { GATEWAY_API_GROUP, referenceGranted, type GrantShape } from '../model/reference-grants.js';
import type { Condition } from './status-conditions.js';

export interface BackendRef {
  readonly group?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
}

export interface RouteBackends {
  readonly kind: string;
  readonly namespace: string;
  readonly backendRefs: readonly BackendRef[];
}

const isService = (r: BackendRef): boolean => (r.group ?? '') === '' && (r.kind ?? 'Service') === 'Service';

export function resolvedRefs(
  route: RouteBackends,
  grants: readonly GrantShape[],
  serviceExists: (namespace: string, name: string) => boolean,
): Condition {
  const ns = route.namespace;
  const refused = (reason: string, message: string): Condition => ({
    type: 'ResolvedRefs',
    status: 'False',
    reason,
    message,
  });
  for (const b of route.backendRefs) {
    const name = b.name ?? '';
    const bns = b.namespace ?? ns;
    if (!isService(b))
      return refused(
        'InvalidKind',
        `referencing unsupported backendRef: group "${b.group ?? ''}" kind "${b.kind ?? ''}"`,
      );
    if (
      bns !== ns &&
      !referenceGranted(
        grants,
        { group: GATEWAY_API_GROUP, kind: route.kind, namespace: ns },
        { group: '', kind: 'Service', namespace: bns, name },
      )
    )
      return refused(
        'RefNotPermitted',
        `backendRef ${name}/${bns} not accessible to a ${route.kind} in namespace "${ns}" (missing a ReferenceGrant?)`,
      );
    if (!serviceExists(bns, name)) return refused('BackendNotFound', `backend(${name}.${bns}.svc) not found`);
  }
  return { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', message: 'All references resolved' };
}
