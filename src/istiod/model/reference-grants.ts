/**
 * ReferenceGrants (gateway.networking.k8s.io): a reference from one namespace into another is allowed only when a
 * ReferenceGrant in the target's namespace names the referring kind and namespace, and the target's kind (and name,
 * when it gives one). Read for a Gateway's certificateRefs and a route's backendRefs, as istio
 * `pilot/pkg/config/kube/gatewaycommon` `ReferenceGrants` reads them.
 */
export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';

export interface GrantShape {
  readonly namespace: string;
  readonly from: readonly { readonly group: string; readonly kind: string; readonly namespace: string }[];
  readonly to: readonly { readonly group: string; readonly kind: string; readonly name: string }[];
}

/** Whether a ReferenceGrant in `toNamespace` lets a `fromKind` of `fromNamespace` refer to the object. */
export function referenceGranted(
  grants: readonly GrantShape[],
  from: { readonly group: string; readonly kind: string; readonly namespace: string },
  to: { readonly group: string; readonly kind: string; readonly namespace: string; readonly name: string },
): boolean {
  return grants.some(
    (g) =>
      g.namespace === to.namespace &&
      g.from.some((f) => f.group === from.group && f.kind === from.kind && f.namespace === from.namespace) &&
      g.to.some((t) => t.group === to.group && t.kind === to.kind && (t.name === '' || t.name === to.name)),
  );
}

type Json = Readonly<Record<string, unknown>>;
const obj = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {});
const objs = (v: unknown): Json[] => (Array.isArray(v) ? v.map(obj) : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** A ReferenceGrant (its spec as the API serves it, or as istiod checked it) in the shape read here. */
export function grantShape(namespace: string, spec: unknown): GrantShape {
  const s = obj(spec);
  return {
    namespace,
    from: objs(s['from']).map((f) => ({
      group: str(f['group']),
      kind: str(f['kind']),
      namespace: str(f['namespace']),
    })),
    to: objs(s['to']).map((t) => ({ group: str(t['group']), kind: str(t['kind']), name: str(t['name']) })),
  };
}
