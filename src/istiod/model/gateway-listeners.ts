/**
 * How routes attach to an ingress Gateway's listeners and what each listener serves, as istio
 * `pilot/pkg/config/kube/gateway/conversion.go` decides it for the `istio` class:
 * - a parentRef names the Gateway (group `gateway.networking.k8s.io`, kind `Gateway`, the route's namespace unless
 *   given), and optionally a listener by `sectionName` or `port`;
 * - the listener admits the route's namespace (`allowedRoutes.namespaces`: Same by default, All, Selector) and kind
 *   (`allowedRoutes.kinds`, else the protocol's: HTTPRoute and GRPCRoute for HTTP and HTTPS, TLSRoute for TLS, and
 *   TCPRoute too when the gateway terminates the TLS, TCPRoute for TCP: `routeKinds`);
 * - the route's hostnames meet the listener's (`*.example.com` covers any name below example.com), each virtual host
 *   taking the more specific of the two names; a route without hostnames takes the listener's;
 * - an HTTPS or TLS listener in Terminate mode (`terminatesTls`) names its certificates by `certificateRefs`: a
 *   Secret of the Gateway's namespace, or of another one a ReferenceGrant there opens to Gateways of this namespace.
 * The inputs are plain shapes, so that the model (checked objects) and the status writer (informer objects) share
 * one reading of the rules.
 */
import { selectorMatches } from '../../apiserver/validation/label-selector.js';
import type { JsonObject } from '../../apiserver/validation/json-fields.js';
import { precedence, type RouteModel } from './http-routes.js';
import { GATEWAY_API_GROUP, referenceGranted, type GrantShape } from './reference-grants.js';

/** The SDS resource name of a Secret a Gateway API listener refers to (istio `credentials.ToKubernetesGatewayResource`). */
export const gatewayCredentialName = (namespace: string, name: string): string =>
  `kubernetes-gateway://${namespace}/${name}`;

/** A reference as the Gateway API writes one (parentRef, certificateRef). */
export interface RefShape {
  readonly group?: string | null | undefined;
  readonly kind?: string | null | undefined;
  readonly name?: string | null | undefined;
  readonly namespace?: string | null | undefined;
  readonly sectionName?: string | null | undefined;
  readonly port?: number | null | undefined;
}

export interface ListenerShape {
  readonly name: string;
  readonly port: number;
  readonly protocol: string;
  readonly hostname: string;
  readonly tls:
    | {
        readonly mode: string;
        readonly certificateRefs: readonly RefShape[];
        readonly options: Readonly<Record<string, string>>;
      }
    | undefined;
  readonly allowedFrom: 'All' | 'Same' | 'Selector' | 'None';
  readonly allowedSelector: JsonObject;
  /** `allowedRoutes.kinds`; empty: the protocol's. */
  readonly allowedKinds: readonly { readonly group: string; readonly kind: string }[];
}

/** The Gateway API's frontend TLS validation (`spec.tls.frontend`): the CA clients' certificates must chain to. */
export interface FrontendValidationShape {
  readonly caCertificateRefs: readonly RefShape[];
  /** `AllowValidOnly` (the default) or `AllowInsecureFallback`. */
  readonly mode: string;
}

export interface GatewayShape {
  readonly namespace: string;
  readonly name: string;
  readonly listeners: readonly ListenerShape[];
  /** `spec.tls.frontend`: the default validation, and those of single ports. */
  readonly frontend?: {
    readonly default: FrontendValidationShape | undefined;
    readonly perPort: readonly { readonly port: number; readonly validation: FrontendValidationShape | undefined }[];
  };
}

export interface RouteShape {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly hostnames: readonly string[];
  readonly parentRefs: readonly RefShape[];
}

/** Why a parentRef to a Gateway does not attach (the route's Accepted reason), or the hosts it attaches with. */
export type Attachment =
  | { readonly attached: true; readonly hostnames: readonly string[] }
  | {
      readonly attached: false;
      readonly reason: 'NotAllowedByListeners' | 'NoMatchingListenerHostname' | 'NoMatchingParent';
      /** As istio's `ParentError` says it. */
      readonly message: string;
    };

/** Whether the gateway terminates the listener's TLS: an HTTPS or TLS listener in Terminate mode (the default). */
export function terminatesTls(l: Pick<ListenerShape, 'protocol' | 'tls'>): boolean {
  return (l.protocol === 'HTTPS' || l.protocol === 'TLS') && (l.tls?.mode ?? 'Terminate') === 'Terminate';
}

/** The route kinds a listener's protocol takes (istio `GenerateGatewaySupportedKinds`). */
export function routeKinds(l: Pick<ListenerShape, 'protocol' | 'tls'>): readonly string[] {
  switch (l.protocol) {
    case 'HTTP':
    case 'HTTPS':
      return ['HTTPRoute', 'GRPCRoute'];
    case 'TLS':
      return terminatesTls(l) ? ['TLSRoute', 'TCPRoute'] : ['TLSRoute'];
    case 'TCP':
      return ['TCPRoute'];
    default:
      return [];
  }
}

/** Whether `ref` names the Gateway `gw` (from a route in `routeNamespace`). */
export function refersToGateway(
  ref: RefShape,
  gw: { namespace: string; name: string },
  routeNamespace: string,
): boolean {
  return (
    (ref.group ?? GATEWAY_API_GROUP) === GATEWAY_API_GROUP &&
    (ref.kind ?? 'Gateway') === 'Gateway' &&
    (ref.namespace ?? routeNamespace) === gw.namespace &&
    ref.name === gw.name
  );
}

/**
 * The name both match, the more specific of the pair (the Gateway API's hostname intersection, Istio's for a server
 * and a VirtualService host); `''` or `*` matches any.
 */
export function meet(listener: string, route: string): string | undefined {
  if (listener === '' || listener === '*' || listener === route) return route;
  if (route === '*') return listener;
  const below = (name: string, wildcard: string): boolean =>
    wildcard.startsWith('*.') && name.endsWith(wildcard.slice(1)) && name.length > wildcard.length - 1;
  if (below(route, listener)) return route;
  if (below(listener, route)) return listener;
  return undefined;
}

/** The hostnames a route serves on a listener; empty when they have none in common. */
export function listenerHostnames(listener: ListenerShape, routeHostnames: readonly string[]): string[] {
  if (routeHostnames.length === 0) return [listener.hostname === '' ? '*' : listener.hostname];
  return [...new Set(routeHostnames.flatMap((h) => meet(listener.hostname, h) ?? []))];
}

function admitsNamespace(
  l: ListenerShape,
  gwNamespace: string,
  routeNamespace: string,
  namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>>,
): boolean {
  switch (l.allowedFrom) {
    case 'All':
      return true;
    case 'Same':
      return routeNamespace === gwNamespace;
    case 'Selector':
      return selectorMatches(l.allowedSelector, namespaceLabels.get(routeNamespace) ?? {});
    case 'None':
      return false;
  }
}

function admitsKind(l: ListenerShape, kind: string): boolean {
  if (l.allowedKinds.length === 0) return routeKinds(l).includes(kind);
  return l.allowedKinds.some(
    (k) => (k.group === '' ? GATEWAY_API_GROUP : k.group) === GATEWAY_API_GROUP && k.kind === kind,
  );
}

/**
 * Whether one parentRef of `route` (already known to name `gw`) attaches to `listener`, and with which hostnames.
 * A parentRef that names another listener (sectionName, port) is `NoMatchingParent` for this one.
 */
export function attach(
  route: RouteShape,
  ref: RefShape,
  gw: GatewayShape,
  listener: ListenerShape,
  namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>>,
): Attachment {
  const unnamed = { attached: false, reason: 'NoMatchingParent', message: 'no matching listener' } as const;
  if (ref.sectionName != null && ref.sectionName !== listener.name) return unnamed;
  if (ref.port != null && ref.port !== listener.port) return unnamed;
  const parentHost = listener.hostname === '' ? '*' : listener.hostname;
  const hostnames = listenerHostnames(listener, route.hostnames);
  if (hostnames.length === 0)
    return {
      attached: false,
      reason: 'NoMatchingListenerHostname',
      message: `no hostnames matched parent hostname "${parentHost}"`,
    };
  if (!admitsNamespace(listener, gw.namespace, route.namespace, namespaceLabels))
    return {
      attached: false,
      reason: 'NotAllowedByListeners',
      message: `hostnames matched parent hostname "${parentHost}", but namespace "${route.namespace}" is not allowed by the parent`,
    };
  if (!admitsKind(listener, route.kind))
    return {
      attached: false,
      reason: 'NotAllowedByListeners',
      message: `kind ${GATEWAY_API_GROUP}/v1/${route.kind} is not allowed`,
    };
  return { attached: true, hostnames };
}

/**
 * One parentRef's outcome over every listener of its Gateway: attached to some (with the count per listener name), or
 * refused with the reason of the listener that came closest (a namespace or kind refused beats no hostname in
 * common, which beats a listener the parentRef does not name).
 */
export function attachParent(
  route: RouteShape,
  ref: RefShape,
  gw: GatewayShape,
  namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>>,
): { readonly listeners: ReadonlyMap<string, readonly string[]>; readonly outcome: Attachment } {
  const listeners = new Map<string, readonly string[]>();
  const rank = { NoMatchingParent: 0, NoMatchingListenerHostname: 1, NotAllowedByListeners: 2 } as const;
  let best: Attachment = { attached: false, reason: 'NoMatchingParent', message: 'no matching listener' };
  for (const l of gw.listeners) {
    const a = attach(route, ref, gw, l, namespaceLabels);
    if (a.attached) listeners.set(l.name, a.hostnames);
    else if (!best.attached && rank[a.reason] > rank[best.reason]) best = a;
  }
  return { listeners, outcome: listeners.size > 0 ? { attached: true, hostnames: [] } : best };
}

/** A listener's certificateRef: its SDS name when it may be used, else the listener's ResolvedRefs failure. */
export type CertificateRef =
  | { readonly ok: true; readonly namespace: string; readonly name: string; readonly credential: string }
  | { readonly ok: false; readonly reason: 'InvalidCertificateRef' | 'RefNotPermitted'; readonly message: string };

/** Istio's checks of a certificateRef that do not read the Secret itself (conversion.go `buildTLS`). */
export function certificateRef(ref: RefShape, gw: GatewayShape, grants: readonly GrantShape[]): CertificateRef {
  const namespace = ref.namespace ?? gw.namespace;
  const name = ref.name ?? '';
  if ((ref.group ?? '') !== '' || (ref.kind ?? 'Secret') !== 'Secret')
    return {
      ok: false,
      reason: 'InvalidCertificateRef',
      message: `invalid certificate reference ${ref.kind ?? ''}/${namespace}/${name}, only secret is allowed`,
    };
  if (
    namespace !== gw.namespace &&
    !referenceGranted(
      grants,
      { group: GATEWAY_API_GROUP, kind: 'Gateway', namespace: gw.namespace },
      { group: '', kind: 'Secret', namespace, name },
    )
  )
    return {
      ok: false,
      reason: 'RefNotPermitted',
      message: `certificateRef ${name}/${namespace} not accessible to a Gateway in namespace "${gw.namespace}" (missing a ReferenceGrant?)`,
    };
  return { ok: true, namespace, name, credential: gatewayCredentialName(namespace, name) };
}

export type ClientValidation =
  | { readonly ok: true; readonly caName: string; readonly optional: boolean }
  | { readonly ok: false; readonly reason: 'InvalidCACertificateRef' | 'RefNotPermitted'; readonly message: string };

/**
 * How clients of an HTTPS listener on `port` are verified, from the Gateway's frontend TLS (its port's entry, else
 * the default), as istio `pilot/pkg/config/kube/gateway/conversion.go` `buildTLS` reads it: one caCertificateRef, a
 * ConfigMap (SDS `configmap://<ns>/<name>-cacert`) or a Secret (`kubernetes-gateway://<ns>/<name>-cacert`), in
 * another namespace only through a ReferenceGrant; `AllowInsecureFallback` lets clients without a certificate in.
 * Undefined: no validation.
 */
export function clientValidation(
  gw: GatewayShape,
  port: number,
  grants: readonly GrantShape[],
): ClientValidation | undefined {
  const f = gw.frontend;
  if (f === undefined) return undefined;
  const v = f.perPort.find((p) => p.port === port)?.validation ?? f.default;
  if (v === undefined || v.caCertificateRefs.length === 0) return undefined;
  if (v.caCertificateRefs.length > 1)
    return { ok: false, reason: 'InvalidCACertificateRef', message: 'only one caCertificateRef is supported' };
  const ref = v.caCertificateRefs[0]!;
  const namespace = ref.namespace ?? gw.namespace;
  const name = ref.name ?? '';
  const kind = (ref.group ?? '') === '' ? (ref.kind ?? 'ConfigMap') : '';
  if (kind !== 'ConfigMap' && kind !== 'Secret')
    return {
      ok: false,
      reason: 'InvalidCACertificateRef',
      message: `invalid CA certificate reference ${ref.group ?? ''}/${ref.kind ?? ''}/${name}.${namespace}, only ConfigMap and Secret are supported`,
    };
  if (
    namespace !== gw.namespace &&
    !referenceGranted(
      grants,
      { group: GATEWAY_API_GROUP, kind: 'Gateway', namespace: gw.namespace },
      { group: '', kind, namespace, name },
    )
  )
    return {
      ok: false,
      reason: 'RefNotPermitted',
      message: `caCertificateRef ${namespace}/${name} not accessible to a Gateway in namespace "${gw.namespace}" (missing a ReferenceGrant?)`,
    };
  const scheme = kind === 'ConfigMap' ? 'configmap' : 'kubernetes-gateway';
  return { ok: true, caName: `${scheme}://${namespace}/${name}-cacert`, optional: v.mode === 'AllowInsecureFallback' };
}

export interface VirtualHostModel {
  readonly hostname: string;
  readonly routes: readonly RouteModel[];
}

export interface GatewayListenerModel {
  readonly name: string;
  readonly port: number;
  readonly protocol: string;
  readonly hostname: string;
  readonly credentialNames: readonly string[];
  readonly virtualHosts: readonly VirtualHostModel[];
  /** Client certificates: the SDS names of the CAs they must chain to; whether a client may present none. */
  readonly clientCaNames?: readonly string[];
  readonly clientCertificateOptional?: boolean;
  /** A TLS listener whose TLS the gateway terminates (HTTPS listeners always do). */
  readonly terminate?: boolean;
  /** Client certificates: the subject alternative names, fingerprints and SPKI hashes one of which they must carry. */
  readonly clientSubjectAltNames?: readonly string[];
  readonly clientCertificateHashes?: readonly string[];
  readonly clientCertificateSpkis?: readonly string[];
}

/**
 * Why the gateway does not serve a listener (its status says so, and it is left out); undefined when it does: HTTP,
 * HTTPS terminated by the gateway, TLS passed through by SNI or terminated, and TCP.
 */
export function unservedListener(l: ListenerShape): string | undefined {
  const mode = l.tls?.mode ?? 'Terminate';
  switch (l.protocol) {
    case 'HTTP':
    case 'TCP':
      return undefined;
    case 'HTTPS':
      return mode === 'Terminate'
        ? undefined
        : `protocol "HTTPS" with TLS mode "${mode}" is not served by amesh's gateway`;
    case 'TLS':
      return mode === 'Passthrough' || mode === 'Terminate'
        ? undefined
        : `protocol "TLS" with TLS mode "${mode}" is not served by amesh's gateway`;
    default:
      return `protocol "${l.protocol}" is not served by amesh's gateway`;
  }
}

/**
 * What each listener of `gw` serves: its certificates, and the routes of the converted route objects attached to it
 * by hostname, each host's routes in precedence order (objects oldest first among equals, as `converted` is given).
 */
export function gatewayListeners(
  gw: GatewayShape,
  converted: readonly { readonly shape: RouteShape; readonly routes: readonly RouteModel[] }[],
  grants: readonly GrantShape[],
  namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>>,
): GatewayListenerModel[] {
  const out: GatewayListenerModel[] = [];
  for (const l of gw.listeners) {
    if (unservedListener(l) !== undefined) continue;
    const hosts = new Map<string, RouteModel[]>();
    for (const { shape, routes } of converted)
      for (const ref of shape.parentRefs) {
        if (!refersToGateway(ref, gw, shape.namespace)) continue;
        const a = attach(shape, ref, gw, l, namespaceLabels);
        if (!a.attached) continue;
        for (const h of a.hostnames) {
          let list = hosts.get(h);
          if (list === undefined) hosts.set(h, (list = []));
          for (const r of routes) if (!list.includes(r)) list.push(r);
        }
      }
    const terminated = terminatesTls(l);
    const credentialNames = terminated
      ? (l.tls?.certificateRefs ?? []).flatMap((r) => {
          const c = certificateRef(r, gw, grants);
          return c.ok ? [c.credential] : [];
        })
      : [];
    const validation = terminated ? clientValidation(gw, l.port, grants) : undefined;
    // A listener whose clients cannot be verified as asked is not served rather than served without the check.
    if (validation?.ok === false) continue;
    out.push({
      name: l.name,
      port: l.port,
      protocol: l.protocol,
      hostname: l.hostname,
      credentialNames,
      ...(l.protocol === 'TLS' && terminated ? { terminate: true } : {}),
      ...(validation === undefined
        ? {}
        : { clientCaNames: [validation.caName], clientCertificateOptional: validation.optional }),
      virtualHosts: [...hosts]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([hostname, routes]) => ({ hostname, routes: [...routes].sort(precedence) })),
    });
  }
  return out;
}

type Json = Readonly<Record<string, unknown>>;
const obj = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {});
const objs = (v: unknown): Json[] => (Array.isArray(v) ? v.map(obj).filter((o) => Object.keys(o).length > 0) : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const opt = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

function refShape(r: Json): RefShape {
  return {
    group: opt(r['group']),
    kind: opt(r['kind']),
    name: opt(r['name']),
    namespace: opt(r['namespace']),
    sectionName: opt(r['sectionName']),
    port: typeof r['port'] === 'number' ? r['port'] : undefined,
  };
}

/** A Gateway's spec (as the API serves it, or as istiod checked it) in the shape the rules above read. */
/** A frontend validation as the API holds it; undefined when there is none. */
function frontendValidation(v: unknown): FrontendValidationShape | undefined {
  if (v === undefined || v === null) return undefined;
  const o = obj(v);
  return { caCertificateRefs: objs(o['caCertificateRefs']).map(refShape), mode: str(o['mode']) || 'AllowValidOnly' };
}

export function gatewayShape(namespace: string, name: string, spec: unknown): GatewayShape {
  const frontend = obj(obj(obj(spec)['tls'])['frontend']);
  return {
    namespace,
    name,
    ...(Object.keys(frontend).length === 0
      ? {}
      : {
          frontend: {
            default: frontendValidation(obj(frontend['default'])['validation']),
            perPort: objs(frontend['perPort']).map((p) => ({
              port: typeof p['port'] === 'number' ? p['port'] : 0,
              validation: frontendValidation(obj(p['tls'])['validation']),
            })),
          },
        }),
    listeners: objs(obj(spec)['listeners']).map((l) => {
      const tls = l['tls'] === undefined || l['tls'] === null ? undefined : obj(l['tls']);
      const allowed = obj(l['allowedRoutes']);
      const namespaces = obj(allowed['namespaces']);
      const from = str(namespaces['from']);
      return {
        name: str(l['name']),
        port: typeof l['port'] === 'number' ? l['port'] : 0,
        protocol: str(l['protocol']),
        hostname: str(l['hostname']),
        tls:
          tls === undefined
            ? undefined
            : {
                mode: str(tls['mode']) || 'Terminate',
                certificateRefs: objs(tls['certificateRefs']).map(refShape),
                options: Object.fromEntries(Object.entries(obj(tls['options'])).map(([k, v]) => [k, str(v)])),
              },
        allowedFrom: from === 'All' || from === 'Selector' || from === 'None' ? from : 'Same',
        allowedSelector: obj(namespaces['selector']),
        allowedKinds: objs(allowed['kinds']).map((k) => ({ group: str(k['group']), kind: str(k['kind']) })),
      };
    }),
  };
}

/** A route object of kind `kind` in the shape the rules above read. */
export function routeShape(kind: string, namespace: string, name: string, spec: unknown): RouteShape {
  const s = obj(spec);
  return { kind, namespace, name, hostnames: strs(s['hostnames']), parentRefs: objs(s['parentRefs']).map(refShape) };
}
