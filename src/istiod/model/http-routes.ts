/**
 * HTTPRoutes attached to a Service (the Gateway API's GAMMA mesh routes) → the routes a waypoint applies to that
 * Service's requests, as istio `pilot/pkg/config/kube/gateway/conversion.go` converts them: each match of each rule
 * becomes one route, routes are ordered oldest HTTPRoute first and then by match precedence (`sortHTTPRoutes`:
 * exact, prefix, regex path, longer paths first, then method, more headers, more query parameters), and requests no
 * route matches get 404. A route's parentRef must name a Service in its own namespace (producer routes, the only kind
 * a waypoint serves); backendRefs must name a Service with a port in the route's namespace. A backendRef that cannot
 * be resolved keeps its weight and has its share answered 500, as the Gateway API asks; a rule that uses something
 * the waypoint cannot do is answered 500 rather than routed as if it were not there.
 */
import type { Resource, ResourceOf } from '../registry/manifest-dir.js';
import type { HttpRouteSpec } from '../registry/manifest-schema.js';
import { GATEWAY_API_GROUP, referenceGranted, type GrantShape } from './reference-grants.js';
import type { TrafficPolicyModel } from './traffic-policies.js';

export interface HeaderModel {
  readonly name: string;
  readonly value: string;
}
export interface HeaderModifierModel {
  readonly set: readonly HeaderModel[];
  readonly add: readonly HeaderModel[];
  readonly remove: readonly string[];
}
/** `prefix` by whole segments (the Gateway API's); `stringPrefix` character by character (a VirtualService's). */
export type PathMatchModel =
  | { readonly exact: string }
  | { readonly prefix: string }
  | { readonly regex: string }
  | { readonly stringPrefix: string };
export type ValueMatchModel = { readonly exact: string } | { readonly regex: string };
export interface RouteMatchModel {
  readonly path: PathMatchModel | undefined;
  readonly headers: readonly (ValueMatchModel & { readonly name: string })[];
  readonly queryParams: readonly (ValueMatchModel & { readonly name: string })[];
  readonly method: string;
}
export type PathRewriteModel = { readonly full: string } | { readonly prefix: string };
export interface BackendModel {
  readonly namespace: string;
  /** Empty: the backendRef could not be resolved. */
  readonly hostname: string;
  readonly port: number;
  readonly weight: number;
  /**
   * A DestinationRule subset (`destination-rules.ts`): its labels (undefined: no rule defines it), and once the
   * model has filled them in, the UIDs of the workloads they select.
   */
  readonly subset?: {
    readonly name: string;
    readonly labels: Readonly<Record<string, string>> | undefined;
    readonly endpoints?: readonly string[];
  };
  /** An ingress gateway reaches it through its waypoint (`istio.io/ingress-use-waypoint`). */
  readonly useWaypoint?: true;
  /** The DestinationRule traffic policy of its host, subset and port. */
  readonly trafficPolicy?: TrafficPolicyModel;
}
/** A copy of each forwarded request, sent to `backend` for a share (of 100) of the requests. */
export interface MirrorModel {
  readonly backend: BackendModel;
  readonly percentage: number;
}
export interface RedirectModel {
  readonly scheme: string;
  readonly hostname: string;
  readonly port: number;
  readonly path: PathRewriteModel | undefined;
  readonly statusCode: number;
}
export type RouteActionModel =
  | { readonly forward: readonly BackendModel[] }
  | { readonly redirect: RedirectModel }
  | { readonly directStatus: number };
export interface RouteModel {
  readonly name: string;
  readonly matches: readonly RouteMatchModel[];
  readonly requestHeaders: HeaderModifierModel | undefined;
  readonly responseHeaders: HeaderModifierModel | undefined;
  readonly action: RouteActionModel;
  readonly rewrite: { readonly hostname: string; readonly path: PathRewriteModel | undefined } | undefined;
  /** Milliseconds; undefined: no limit. */
  readonly timeoutMs: number | undefined;
  /** A VirtualService's retries; undefined: Istio's default. */
  readonly retries?: {
    readonly attempts: number;
    readonly retryOn: readonly string[];
    readonly statusCodes: readonly number[];
    readonly perTryTimeoutMs: number | undefined;
  };
  /** Where copies of the forwarded requests go. */
  readonly mirrors?: readonly MirrorModel[];
  /** A VirtualService's fault injection: percentages of 100. */
  readonly fault?: {
    readonly delay?: { readonly ms: number; readonly percentage: number };
    readonly abort?: { readonly httpStatus: number; readonly percentage: number };
  };
}
/** The routes of one Service port (0: every port), in the order the waypoint tries them. */
export interface ServiceRoutesModel {
  readonly namespace: string;
  readonly hostname: string;
  readonly port: number;
  readonly routes: readonly RouteModel[];
}

type Rule = NonNullable<NonNullable<HttpRouteSpec['rules']>[number]>;
type Match = NonNullable<NonNullable<Rule['matches']>[number]>;
type Filter = NonNullable<NonNullable<Rule['filters']>[number]>;
type Ref = NonNullable<NonNullable<HttpRouteSpec['parentRefs']>[number]>;

export const present = <T>(v: readonly (T | null)[] | null | undefined): T[] =>
  (v ?? []).flatMap((x) => (x === null ? [] : [x]));

/** The Gateway API's Duration (GEP-2257): `1h`, `30s`, `1m30s`, `500ms`; "0s" means none. */
export function gatewayDuration(s: string): number | undefined {
  if (!/^([0-9]{1,5}(h|m|s|ms)){1,4}$/.test(s)) return undefined;
  const unit = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 } as const;
  let ms = 0;
  for (const [, n, u] of s.matchAll(/([0-9]+)(ms|h|m|s)/g)) ms += Number(n) * unit[u as keyof typeof unit];
  return ms;
}

export function validRegex(s: string): boolean {
  try {
    new RegExp(s, 'u');
    return true;
  } catch {
    return false;
  }
}

/** Why the waypoint cannot honour a match as written, or its model. */
function convertMatch(m: Match): RouteMatchModel | string {
  const p = m.path ?? { type: 'PathPrefix', value: '/' };
  const value = p.value ?? '/';
  let path: PathMatchModel | undefined;
  switch (p.type ?? 'PathPrefix') {
    case 'Exact':
      path = { exact: value };
      break;
    case 'PathPrefix':
      path = value === '/' ? undefined : { prefix: value.replace(/\/+$/, '') };
      break;
    case 'RegularExpression':
      if (!validRegex(value)) return `path regex ${JSON.stringify(value)} does not compile`;
      path = { regex: value };
      break;
    default:
      return `path match type ${String(p.type)} is not supported`;
  }
  const values = (
    list: readonly ({ type?: string | null; name?: string | null; value?: string | null } | null)[] | null | undefined,
    lower: boolean,
  ): (ValueMatchModel & { name: string })[] | string => {
    const out: (ValueMatchModel & { name: string })[] = [];
    const seen = new Set<string>();
    for (const h of present(list)) {
      const name = lower ? (h.name ?? '').toLowerCase() : (h.name ?? '');
      // The Gateway API: of several matches on one name, only the first counts.
      if (seen.has(name)) continue;
      seen.add(name);
      const v = h.value ?? '';
      if ((h.type ?? 'Exact') === 'Exact') out.push({ name, exact: v });
      else if (h.type === 'RegularExpression') {
        if (!validRegex(v)) return `regex ${JSON.stringify(v)} for ${name} does not compile`;
        out.push({ name, regex: v });
      } else return `match type ${String(h.type)} for ${name} is not supported`;
    }
    return out;
  };
  const headers = values(m.headers, true);
  if (typeof headers === 'string') return headers;
  const queryParams = values(m.queryParams, false);
  if (typeof queryParams === 'string') return queryParams;
  return { path, headers, queryParams, method: m.method ?? '' };
}

export function headerModifier(f: Filter['requestHeaderModifier']): HeaderModifierModel | undefined {
  if (f == null) return undefined;
  const pairs = (l: typeof f.set): HeaderModel[] =>
    present(l).map((h) => ({ name: (h.name ?? '').toLowerCase(), value: h.value ?? '' }));
  return { set: pairs(f.set), add: pairs(f.add), remove: present(f.remove).map((h) => h.toLowerCase()) };
}

function pathRewrite(p: NonNullable<Filter['urlRewrite']>['path']): PathRewriteModel | undefined | string {
  if (p == null) return undefined;
  if (p.type === 'ReplaceFullPath') return { full: p.replaceFullPath ?? '/' };
  if (p.type === 'ReplacePrefixMatch') return { prefix: p.replacePrefixMatch ?? '/' };
  return `path modifier ${String(p.type)} is not supported`;
}

const isService = (r: Ref): boolean => (r.group ?? '') === '' && (r.kind ?? 'Service') === 'Service';

/** What the routes read of the Services: which exist and their ports, by `namespace/name`. */
export type ServicePorts = ReadonlyMap<string, ReadonlySet<number>>;

interface Converted {
  readonly routes: RouteModel[];
  readonly warnings: string[];
}

/** One HTTPRoute's rules as routes (one per match), unsorted. */
/**
 * A backendRef of a route in `ns` as the waypoint forwards to it. One that cannot be resolved (a kind other than
 * Service, another namespace, no such Service or port) keeps its weight with no hostname, and `warn` says why.
 */
export function resolveBackend(
  b: Ref & { readonly weight?: number | null },
  route: { readonly kind: string; readonly namespace: string; readonly grants: readonly GrantShape[] },
  services: ServicePorts,
  domainSuffix: string,
  warn: (why: string) => void,
): BackendModel {
  const ns = route.namespace;
  const weight = b.weight ?? 1;
  const bns = b.namespace ?? ns;
  const unresolved = (why: string): BackendModel => {
    warn(`backendRef ${bns}/${b.name ?? ''}: ${why}`);
    return { namespace: bns, hostname: '', port: 0, weight };
  };
  if (!isService(b)) return unresolved(`kind ${b.kind ?? ''} is not supported`);
  if (
    bns !== ns &&
    !referenceGranted(
      route.grants,
      { group: GATEWAY_API_GROUP, kind: route.kind, namespace: ns },
      { group: '', kind: 'Service', namespace: bns, name: b.name ?? '' },
    )
  )
    return unresolved('another namespace needs a ReferenceGrant there that lets this route refer to the Service');
  const ports = services.get(`${bns}/${b.name ?? ''}`);
  if (ports === undefined) return unresolved('no such Service');
  if (b.port == null || !ports.has(b.port)) return unresolved(`the Service has no port ${b.port ?? '(none given)'}`);
  return { namespace: bns, hostname: `${b.name}.${bns}.svc.${domainSuffix}`, port: b.port, weight };
}

/**
 * A RequestMirror filter's backend and share (`percent`, or `fraction` of a denominator of 100 by default; neither:
 * every request). A backendRef that cannot be resolved mirrors nothing, and `warn` says why.
 */
export function requestMirror(
  f: NonNullable<Filter['requestMirror']>,
  route: Parameters<typeof resolveBackend>[1],
  services: ServicePorts,
  domainSuffix: string,
  warn: (why: string) => void,
): MirrorModel | undefined {
  const backend = resolveBackend({ ...f.backendRef, weight: 1 }, route, services, domainSuffix, (why) =>
    warn(`RequestMirror ${why}; nothing is mirrored`),
  );
  if (backend.hostname === '') return undefined;
  let percentage = 100;
  if (f.percent != null) percentage = f.percent;
  else if (f.fraction != null) percentage = ((f.fraction.numerator ?? 0) * 100) / (f.fraction.denominator ?? 100);
  return { backend, percentage: Math.min(100, Math.max(0, percentage)) };
}

function convertRules(
  route: ResourceOf<'HTTPRoute'>,
  services: ServicePorts,
  domainSuffix: string,
  grants: readonly GrantShape[],
): Converted {
  const ns = route.metadata.namespace;
  const referrer = { kind: 'HTTPRoute', namespace: ns, grants };
  const name = `${ns}/${route.metadata.name}`;
  const routes: RouteModel[] = [];
  const warnings: string[] = [];
  present(route.spec.rules).forEach((rule, i) => {
    const ruleName = `${name}.${i}`;
    const fail = (why: string): void => {
      warnings.push(`HTTPRoute ${ruleName}: ${why}; its requests are answered 500`);
    };
    let problem: string | undefined;
    let requestHeaders: HeaderModifierModel | undefined;
    let responseHeaders: HeaderModifierModel | undefined;
    let redirect: RedirectModel | undefined;
    let rewrite: RouteModel['rewrite'];
    const mirrors: MirrorModel[] = [];
    for (const f of present(rule.filters)) {
      switch (f.type) {
        case 'RequestMirror': {
          const m = requestMirror(f.requestMirror ?? {}, referrer, services, domainSuffix, (why) =>
            warnings.push(`HTTPRoute ${ruleName}: ${why}`),
          );
          if (m !== undefined) mirrors.push(m);
          break;
        }
        case 'RequestHeaderModifier':
          requestHeaders = headerModifier(f.requestHeaderModifier);
          break;
        case 'ResponseHeaderModifier':
          responseHeaders = headerModifier(f.responseHeaderModifier);
          break;
        case 'RequestRedirect': {
          const r = f.requestRedirect ?? {};
          const path = pathRewrite(r.path);
          if (typeof path === 'string') problem = path;
          else
            redirect = {
              scheme: r.scheme ?? '',
              hostname: r.hostname ?? '',
              port: r.port ?? 0,
              path,
              statusCode: r.statusCode ?? 302,
            };
          break;
        }
        case 'URLRewrite': {
          const path = pathRewrite(f.urlRewrite?.path);
          if (typeof path === 'string') problem = path;
          else rewrite = { hostname: f.urlRewrite?.hostname ?? '', path };
          break;
        }
        default:
          problem = `filter ${String(f.type)} is not supported by the waypoint`;
      }
    }
    let timeoutMs: number | undefined;
    for (const t of [rule.timeouts?.request, rule.timeouts?.backendRequest]) {
      if (t == null) continue;
      const ms = gatewayDuration(t);
      if (ms === undefined) problem = `timeout ${JSON.stringify(t)} is not a Gateway API duration`;
      else if (ms > 0) timeoutMs = timeoutMs === undefined ? ms : Math.min(timeoutMs, ms);
    }
    const backends = present(rule.backendRefs).map((b) =>
      resolveBackend(b, referrer, services, domainSuffix, (why) => warnings.push(`HTTPRoute ${ruleName}: ${why}`)),
    );
    let action: RouteActionModel;
    if (problem !== undefined) {
      fail(problem);
      action = { directStatus: 500 };
    } else if (redirect !== undefined) action = { redirect };
    else if (backends.length === 0 || backends.every((b) => b.hostname === '')) action = { directStatus: 500 };
    else action = { forward: backends };
    const matches = present(rule.matches);
    for (const m of matches.length === 0 ? [{}] : matches) {
      const match = convertMatch(m);
      if (typeof match === 'string') {
        fail(match);
        continue;
      }
      routes.push({
        name: ruleName,
        matches: [match],
        requestHeaders,
        responseHeaders,
        action,
        rewrite: problem === undefined ? rewrite : undefined,
        timeoutMs,
        ...(mirrors.length > 0 && problem === undefined ? { mirrors } : {}),
      });
    }
  });
  return { routes, warnings };
}

/** Exact paths first, then prefixes, then regexes; "/" (any path) counts as a one-character prefix. */
function pathRank(p: PathMatchModel | undefined): number {
  if (p === undefined) return 1;
  if ('exact' in p) return 3;
  return 'prefix' in p || 'stringPrefix' in p ? 2 : 0;
}

function pathText(p: PathMatchModel | undefined): string {
  if (p === undefined) return '/';
  if ('exact' in p) return p.exact;
  if ('stringPrefix' in p) return p.stringPrefix;
  return 'prefix' in p ? p.prefix : p.regex;
}

/** Gateway API precedence of one route's (single) match: exact, then prefix, then regex; longer paths first; etc. */
export function precedence(a: RouteModel, b: RouteModel): number {
  const ma = a.matches[0];
  const mb = b.matches[0];
  if (ma === undefined) return mb === undefined ? 0 : 1;
  if (mb === undefined) return -1;
  return (
    pathRank(mb.path) - pathRank(ma.path) ||
    pathText(mb.path).length - pathText(ma.path).length ||
    Number(mb.method !== '') - Number(ma.method !== '') ||
    mb.headers.length - ma.headers.length ||
    mb.queryParams.length - ma.queryParams.length
  );
}

/** A route object of either kind (HTTPRoute, GRPCRoute) converted: its routes and what it says of its parents. */
export interface ConvertedRoute {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly parentRefs: readonly Ref[];
  readonly routes: readonly RouteModel[];
  readonly warnings: readonly string[];
}

/** Route objects oldest first, then by `namespace/name`: the order Istio gives their routes among equals. */
export function byAge<T extends { readonly metadata: Resource['metadata'] }>(routes: readonly T[]): T[] {
  return [...routes].sort(
    (a, b) =>
      (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
      `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`),
  );
}

/** Whether a route object names a Service among its parents (a mesh route a waypoint serves). */
export const hasServiceParent = (r: ResourceOf<'HTTPRoute'> | ResourceOf<'GRPCRoute'>): boolean =>
  present(r.spec.parentRefs).some(isService);

/** One HTTPRoute's routes, one per match of each rule. */
export function convertHttpRoute(
  route: ResourceOf<'HTTPRoute'>,
  services: ServicePorts,
  domainSuffix: string,
  grants: readonly GrantShape[] = [],
): ConvertedRoute {
  const { metadata, spec } = route;
  const c = convertRules(route, services, domainSuffix, grants);
  return {
    kind: 'HTTPRoute',
    namespace: metadata.namespace,
    name: metadata.name,
    parentRefs: present(spec.parentRefs),
    ...c,
  };
}

/**
 * Every Service port's routes from the converted routes whose parentRefs name a Service, keyed
 * `namespace/hostname:port` (port 0: every port). A parentRef with a port gets the routes for every port as well.
 * Routes are sorted by precedence; among equals they keep the order of `converted`.
 */
export function routeTables(
  converted: readonly ConvertedRoute[],
  services: ServicePorts,
  domainSuffix: string,
): { readonly tables: ReadonlyMap<string, ServiceRoutesModel>; readonly warnings: readonly string[] } {
  const warnings: string[] = [];
  /** Each table and which of `converted` attach to it. */
  const byParent = new Map<string, { namespace: string; hostname: string; port: number; from: Set<number> }>();
  for (const [i, route] of converted.entries()) {
    const ns = route.namespace;
    const parents = route.parentRefs.filter(isService);
    if (parents.length === 0) continue;
    warnings.push(...route.warnings);
    for (const p of parents) {
      if ((p.namespace ?? ns) !== ns) {
        warnings.push(
          `${route.kind} ${ns}/${route.name}: a parentRef to a Service in another namespace is not served by a waypoint`,
        );
        continue;
      }
      if (!services.has(`${ns}/${p.name ?? ''}`)) continue;
      const hostname = `${p.name}.${ns}.svc.${domainSuffix}`;
      const port = p.port ?? 0;
      const key = `${ns}/${hostname}:${port}`;
      let t = byParent.get(key);
      if (t === undefined) byParent.set(key, (t = { namespace: ns, hostname, port, from: new Set() }));
      t.from.add(i);
    }
  }
  const tables = new Map<string, ServiceRoutesModel>();
  for (const [key, { from, ...t }] of byParent) {
    // A table for one port also holds the routes for every port.
    const all = t.port === 0 ? undefined : byParent.get(`${t.namespace}/${t.hostname}:0`)?.from;
    const routes = converted.flatMap((c, i) => (from.has(i) || all?.has(i) === true ? c.routes : []));
    tables.set(key, { ...t, routes: routes.sort(precedence) });
  }
  return { tables, warnings };
}
