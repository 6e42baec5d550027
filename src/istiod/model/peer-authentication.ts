import type { ResourceOf } from '../registry/manifest-dir.js';
import type { MtlsMode } from '../registry/manifest-schema.js';
import { AuthzAction, AuthzScope, emptyMatch, type AuthorizationModel } from './types.js';

/** The static DENY ztunnel gets for STRICT mTLS (istio `pilot/pkg/serviceregistry/ambient/authorization.go`): deny any connection without a peer identity. */
export const STATIC_STRICT_POLICY = 'istio_converted_static_strict';

export function staticStrictPolicy(rootNamespace: string): AuthorizationModel {
  return {
    name: STATIC_STRICT_POLICY,
    namespace: rootNamespace,
    scope: AuthzScope.WORKLOAD_SELECTOR,
    action: AuthzAction.DENY,
    rules: [{ clauses: [{ matches: [{ ...emptyMatch(), notPrincipals: [{ presence: true }] }] }] }],
    dryRun: false,
  };
}

type PeerAuthentication = ResourceOf<'PeerAuthentication'>;

function mode(pa: PeerAuthentication): MtlsMode {
  return pa.spec.mtls?.mode ?? 'UNSET';
}

function selectorOf(pa: PeerAuthentication): Readonly<Record<string, string>> {
  return pa.spec.selector?.matchLabels ?? {};
}

/** Oldest wins per level; manifests carry no creation time, so the first by name stands in for it. */
function first(pas: PeerAuthentication[]): PeerAuthentication | undefined {
  return [...pas].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))[0];
}

/**
 * The effective mTLS mode of a workload: workload-selector PA, then namespace PA, then the mesh-wide PA in the root
 * namespace; UNSET inherits; nothing set means PERMISSIVE (istio `pilot/pkg/serviceregistry/ambient/authorization.go`).
 */
export function effectiveMtlsMode(
  pas: readonly PeerAuthentication[],
  rootNamespace: string,
  namespace: string,
  labels: Readonly<Record<string, string>>,
): MtlsMode {
  const noSel = (p: PeerAuthentication): boolean => Object.keys(selectorOf(p)).length === 0;
  const workload = first(
    pas.filter(
      (p) =>
        p.metadata.namespace === namespace &&
        !noSel(p) &&
        Object.entries(selectorOf(p)).every(([k, v]) => labels[k] === v),
    ),
  );
  const ns = first(pas.filter((p) => p.metadata.namespace === namespace && noSel(p) && namespace !== rootNamespace));
  const mesh = first(pas.filter((p) => p.metadata.namespace === rootNamespace && noSel(p)));
  for (const p of [workload, ns, mesh]) {
    if (p !== undefined && mode(p) !== 'UNSET') return mode(p);
  }
  return 'PERMISSIVE';
}

/** The workload-level PeerAuthentication that applies to a workload (oldest by name), if any. */
export function workloadPeerAuthentication(
  pas: readonly PeerAuthentication[],
  rootNamespace: string,
  namespace: string,
  labels: Readonly<Record<string, string>>,
): PeerAuthentication | undefined {
  if (namespace === rootNamespace) return undefined;
  return first(
    pas.filter(
      (p) =>
        p.metadata.namespace === namespace &&
        Object.keys(selectorOf(p)).length > 0 &&
        Object.entries(selectorOf(p)).every(([k, v]) => labels[k] === v),
    ),
  );
}

export const convertedPeerAuthenticationName = (pa: PeerAuthentication): string =>
  `converted_peer_authentication_${pa.metadata.name}`;

/**
 * A workload-selector PeerAuthentication with `portLevelMtls` → a DENY policy (istio `pilot/pkg/serviceregistry/ambient/authorization.go`), given the workload's
 * effective mode without port overrides. Under STRICT, PERMISSIVE/DISABLE ports become one rule that denies
 * plaintext on every other port; otherwise each STRICT port is a rule that denies plaintext on that port.
 * Undefined when the port settings change nothing.
 */
export function convertPortLevelMtls(pa: PeerAuthentication, effective: MtlsMode): AuthorizationModel | undefined {
  const ports = Object.entries(pa.spec.portLevelMtls ?? {}).flatMap(([p, v]) => {
    const n = Number(p);
    const m = v.mode;
    return Number.isInteger(n) && n > 0 && n <= 65535 && (m === 'STRICT' || m === 'PERMISSIVE' || m === 'DISABLE')
      ? [{ port: n, mode: m }]
      : [];
  });
  const noPrincipal = { ...emptyMatch(), notPrincipals: [{ presence: true as const }] };
  let rules: AuthorizationModel['rules'];
  if (effective === 'STRICT') {
    const open = ports.filter((p) => p.mode !== 'STRICT').map((p) => p.port);
    if (open.length === 0) return undefined;
    rules = [
      {
        clauses: [
          ...open.map((p) => ({ matches: [{ ...emptyMatch(), notDestinationPorts: [p] }] })),
          { matches: [noPrincipal] },
        ],
      },
    ];
  } else {
    const strict = ports.filter((p) => p.mode === 'STRICT').map((p) => p.port);
    if (strict.length === 0) return undefined;
    rules = strict.map((p) => ({ clauses: [{ matches: [{ ...noPrincipal, destinationPorts: [p] }] }] }));
  }
  return {
    name: convertedPeerAuthenticationName(pa),
    namespace: pa.metadata.namespace,
    scope: AuthzScope.WORKLOAD_SELECTOR,
    action: AuthzAction.DENY,
    rules,
    dryRun: false,
  };
}
