/**
 * The waypoint's HTTP routes, converted once from istiod's `amesh.waypoint.v1.ServiceRoutes` (docs/waypoint-xds.md)
 * and matched per request as Envoy matches the routes Istio generates from an HTTPRoute: paths without their query
 * (a prefix by whole segments, a regex over the whole path), header values as received, the first value of a query
 * parameter, the method. Regexes are compiled here, once; a route whose regex JavaScript cannot compile is rejected.
 */
import type {
  Backend as XdsBackend,
  HeaderModifier,
  PathRewrite,
  Route as XdsRoute,
  RouteMatch,
  ServiceRoutes,
} from '../api/amesh/waypoint/v1/waypoint_pb.js';
import { durationMs } from '@bufbuild/protobuf/wkt';
import { DEFAULT_RETRY_POLICY, retryPolicyFromXds, type RetryPolicy } from './retry-policy.js';
import { endpointPolicyFromXds, type EndpointPolicy } from './endpoint-balancer.js';
import { connectionLimitsFromXds, type ConnectionLimits } from './circuit-breakers.js';

type Value = { readonly exact: string } | { readonly regex: RegExp };
interface Match {
  readonly path:
    | { readonly exact: string }
    | { readonly prefix: string }
    | { readonly stringPrefix: string }
    | { readonly regex: RegExp }
    | undefined;
  readonly headers: readonly (Value & { readonly name: string })[];
  readonly query: readonly (Value & { readonly name: string })[];
  readonly method: string;
}
export interface HeaderEdits {
  readonly set: readonly (readonly [string, string])[];
  readonly add: readonly (readonly [string, string])[];
  readonly remove: readonly string[];
}
export type PathEdit = { readonly full: string } | { readonly prefix: string };
export interface Backend {
  readonly namespace: string;
  /** Empty: unresolved by istiod; its share is answered 500. */
  readonly hostname: string;
  readonly port: number;
  readonly weight: number;
  /** A DestinationRule subset: only these workloads (by UID) of the Service; undefined: any. */
  readonly endpoints: ReadonlySet<string> | undefined;
  /** At an ingress gateway: reached at the Service's address, through its waypoint. */
  readonly useWaypoint: boolean;
  /** How its endpoints are picked (the DestinationRule traffic policy), and the key of their balancing state. */
  readonly policy: EndpointPolicy;
  readonly cluster: string;
  /** Its circuit breakers' thresholds (the DestinationRule's `connectionPool`). */
  readonly limits: ConnectionLimits;
}
/** Copies of the forwarded requests: to `backend`, for a share of 100. */
export interface Mirror {
  readonly backend: Backend;
  readonly percentage: number;
}
export type RouteAction =
  | { readonly t: 'forward'; readonly backends: readonly Backend[]; readonly totalWeight: number }
  | {
      readonly t: 'redirect';
      readonly scheme: string;
      readonly hostname: string;
      readonly port: number;
      readonly path: PathEdit | undefined;
      readonly status: number;
    }
  | { readonly t: 'direct'; readonly status: number };
export interface Route {
  readonly name: string;
  readonly matches: readonly Match[];
  readonly requestHeaders: HeaderEdits | undefined;
  readonly responseHeaders: HeaderEdits | undefined;
  readonly action: RouteAction;
  readonly rewrite: { readonly hostname: string; readonly path: PathEdit | undefined } | undefined;
  readonly timeoutMs: number | undefined;
  readonly retry: RetryPolicy;
  readonly mirrors: readonly Mirror[];
  /** Shares of 100: requests delayed, then requests answered with `status`. */
  readonly fault:
    | {
        readonly delay: { readonly ms: number; readonly percentage: number } | undefined;
        readonly abort: { readonly status: number; readonly percentage: number } | undefined;
      }
    | undefined;
}
export interface RouteTable {
  readonly namespace: string;
  readonly hostname: string;
  readonly port: number;
  readonly routes: readonly Route[];
}

/** What a route is matched against. */
export interface RoutedRequest {
  readonly method: string;
  /** The request target: path and query. */
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

const anchored = (re: string): RegExp => new RegExp(`^(?:${re})$`, 'u');

function value(m: { name: string; value: RouteMatch['headers'][number]['value'] }): Value & { name: string } {
  if (m.value.case === 'regex') return { name: m.name, regex: anchored(m.value.value) };
  return { name: m.name, exact: m.value.value ?? '' };
}

function edits(h: HeaderModifier | undefined): HeaderEdits | undefined {
  if (h === undefined) return undefined;
  return Object.freeze({
    set: h.set.map((x) => [x.name.toLowerCase(), x.value] as const),
    add: h.add.map((x) => [x.name.toLowerCase(), x.value] as const),
    remove: h.remove.map((x) => x.toLowerCase()),
  });
}

function pathEdit(p: PathRewrite | undefined): PathEdit | undefined {
  if (p === undefined || p.kind.case === undefined) return undefined;
  return p.kind.case === 'full' ? { full: p.kind.value } : { prefix: p.kind.value };
}

function pathMatch(p: RouteMatch['path']): Match['path'] {
  switch (p?.kind.case) {
    case 'exact':
      return { exact: p.kind.value };
    case 'prefix':
      return { prefix: p.kind.value.replace(/\/+$/, '') };
    case 'regex':
      return { regex: anchored(p.kind.value) };
    case 'stringPrefix':
      return { stringPrefix: p.kind.value };
    default:
      return undefined;
  }
}

/** The route of a table istiod sent that could not be converted. */
const BROKEN: Route = Object.freeze<Route>({
  name: 'rejected',
  matches: [],
  requestHeaders: undefined,
  responseHeaders: undefined,
  action: { t: 'direct', status: 500 },
  rewrite: undefined,
  timeoutMs: undefined,
  retry: DEFAULT_RETRY_POLICY,
  mirrors: [],
  fault: undefined,
});

/** Converts one list of istiod's routes; throws when one cannot be used (a regex JavaScript cannot compile). */
export function routesFromXds(routes: readonly XdsRoute[]): Route[] {
  return routes.map((r): Route => {
    const a = r.action;
    let action: RouteAction;
    if (a.case === 'forward') {
      const backends = a.value.backends.map(backend);
      action = { t: 'forward', backends, totalWeight: backends.reduce((n, b) => n + b.weight, 0) };
    } else if (a.case === 'redirect') {
      const d = a.value;
      action = {
        t: 'redirect',
        scheme: d.scheme,
        hostname: d.hostname,
        port: d.port,
        path: pathEdit(d.path),
        status: d.statusCode || 302,
      };
    } else action = { t: 'direct', status: a.case === 'directStatus' ? a.value : 500 };
    return Object.freeze({
      name: r.name,
      matches: r.matches.map((m) => ({
        path: pathMatch(m.path),
        headers: m.headers.map((h) => value({ name: h.name.toLowerCase(), value: h.value })),
        query: m.queryParams.map(value),
        method: m.method,
      })),
      requestHeaders: edits(r.requestHeaders),
      responseHeaders: edits(r.responseHeaders),
      action,
      rewrite: r.rewrite === undefined ? undefined : { hostname: r.rewrite.hostname, path: pathEdit(r.rewrite.path) },
      timeoutMs: r.timeout === undefined ? undefined : durationMs(r.timeout),
      retry: retryPolicyFromXds(r.retries),
      mirrors: r.mirrors.flatMap((m) =>
        m.backend === undefined ? [] : [{ backend: backend(m.backend), percentage: m.percentage }],
      ),
      fault:
        r.fault === undefined
          ? undefined
          : {
              delay:
                r.fault.delay === undefined
                  ? undefined
                  : {
                      ms: r.fault.delay.fixedDelay === undefined ? 0 : durationMs(r.fault.delay.fixedDelay),
                      percentage: r.fault.delay.percentage,
                    },
              abort:
                r.fault.abort === undefined
                  ? undefined
                  : { status: r.fault.abort.httpStatus, percentage: r.fault.abort.percentage },
            },
    });
  });
}

/** A backend as istiod sends it (a route's, or a Service's own with its traffic policy), converted once. */
export function backend(b: XdsBackend): Backend {
  return {
    namespace: b.namespace,
    hostname: b.hostname,
    port: b.port,
    weight: b.weight,
    endpoints: b.subset === '' ? undefined : new Set(b.endpoints),
    useWaypoint: b.useWaypoint,
    policy: endpointPolicyFromXds(b.trafficPolicy),
    limits: connectionLimitsFromXds(b.trafficPolicy?.connectionPool),
    // As Envoy names the cluster (`outbound|<port>|<subset>|<host>`), the namespace added.
    cluster: `${String(b.port)}|${b.subset}|${b.hostname}|${b.namespace}`,
  };
}

/** A table whose routes could not be converted: its requests are answered 500, never forwarded as if unrouted. */
export function brokenTable(namespace: string, hostname: string, port: number): RouteTable {
  return Object.freeze({ namespace, hostname, port, routes: [BROKEN] });
}

/** Converts istiod's route tables; a table that cannot be used answers 500, and the reason is returned. */
export function routeTablesFromXds(services: readonly ServiceRoutes[]): { tables: RouteTable[]; rejected: string[] } {
  const tables: RouteTable[] = [];
  const rejected: string[] = [];
  for (const s of services) {
    try {
      tables.push(
        Object.freeze({ namespace: s.namespace, hostname: s.hostname, port: s.port, routes: routesFromXds(s.routes) }),
      );
    } catch (e) {
      rejected.push(`routes of ${s.namespace}/${s.hostname}:${s.port}: ${(e as Error).message}`);
      tables.push(brokenTable(s.namespace, s.hostname, s.port));
    }
  }
  return { tables, rejected };
}

function splitUrl(url: string): { path: string; query: string } {
  const q = url.indexOf('?');
  return q < 0 ? { path: url, query: '' } : { path: url.slice(0, q), query: url.slice(q + 1) };
}

function valueHolds(v: Value, actual: string | undefined): boolean {
  if (actual === undefined) return false;
  return 'exact' in v ? actual === v.exact : v.regex.test(actual);
}

function matches(m: Match, req: RoutedRequest, path: string, query: URLSearchParams | undefined): boolean {
  if (m.method !== '' && m.method !== req.method) return false;
  const p = m.path;
  if (p !== undefined) {
    if ('exact' in p) {
      if (path !== p.exact) return false;
    } else if ('stringPrefix' in p) {
      if (!path.startsWith(p.stringPrefix)) return false;
    } else if ('prefix' in p) {
      if (!(path === p.prefix || path.startsWith(`${p.prefix}/`) || (p.prefix === '' && path.startsWith('/'))))
        return false;
    } else if (!p.regex.test(path)) return false;
  }
  for (const h of m.headers) {
    const v = req.headers[h.name];
    if (!valueHolds(h, Array.isArray(v) ? v.join(',') : v)) return false;
  }
  for (const q of m.query) if (!valueHolds(q, query?.get(q.name) ?? undefined)) return false;
  return true;
}

/** The first route of `table` that `req` matches; undefined: none (the waypoint answers 404). */
export function routeRequest(table: RouteTable, req: RoutedRequest): Route | undefined {
  const { path, query } = splitUrl(req.url);
  const params = query === '' ? undefined : new URLSearchParams(query);
  for (const r of table.routes)
    if (r.matches.length === 0 || r.matches.some((m) => matches(m, req, path, params))) return r;
  return undefined;
}

/** The backend for one request, picked by weight. */
export function pickBackend(
  action: Extract<RouteAction, { t: 'forward' }>,
  random: () => number = Math.random,
): Backend | undefined {
  if (action.totalWeight <= 0) return undefined;
  let n = random() * action.totalWeight;
  for (const b of action.backends) {
    if (n < b.weight) return b;
    n -= b.weight;
  }
  return action.backends.at(-1);
}

/** The path after a rewrite or redirect: a full replacement, or the matched prefix replaced. */
export function editPath(url: string, edit: PathEdit | undefined, route: Route): string {
  if (edit === undefined) return url;
  const { path, query } = splitUrl(url);
  const rest = query === '' ? '' : `?${query}`;
  if ('full' in edit) return `${edit.full}${rest}`;
  const prefix = route.matches
    .map((m) => m.path)
    .find((p) => p !== undefined && ('prefix' in p || 'stringPrefix' in p));
  let matched = '';
  if (prefix !== undefined && 'prefix' in prefix) matched = prefix.prefix;
  else if (prefix !== undefined && 'stringPrefix' in prefix) matched = prefix.stringPrefix;
  const tail = path.slice(matched.length);
  const joined = edit.prefix.endsWith('/') && tail.startsWith('/') ? edit.prefix + tail.slice(1) : edit.prefix + tail;
  return `${joined === '' ? '/' : joined}${rest}`;
}

/** A header set with `e` applied: set, then add, then remove. */
export function applyHeaderEdits(
  headers: Readonly<Record<string, string | string[] | number | undefined>>,
  e: HeaderEdits,
): Record<string, string | string[] | number> {
  const out: Record<string, string | string[] | number> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !e.remove.includes(k)) out[k] = v;
  for (const [k, v] of e.set) if (!e.remove.includes(k)) out[k] = v;
  for (const [k, v] of e.add) {
    if (e.remove.includes(k)) continue;
    const cur = out[k];
    if (cur === undefined) out[k] = v;
    else out[k] = Array.isArray(cur) ? [...cur, v] : [String(cur), v];
  }
  return out;
}

const WELL_KNOWN_PORTS: Readonly<Record<string, number>> = { http: 80, https: 443 };

/**
 * A redirect's `Location` (the Gateway API's RequestRedirect): the scheme, host and path the route gives, else the
 * request's; the port the route gives, else the scheme's well-known one when the route changes the scheme, else
 * the port the request came to. A well-known port is left out.
 */
export function redirectLocation(
  req: RoutedRequest,
  a: Extract<RouteAction, { t: 'redirect' }>,
  route: Route,
  port: number,
): string {
  const scheme = a.scheme || 'http';
  const hostHeader = typeof req.headers['host'] === 'string' ? req.headers['host'] : '';
  const host = a.hostname || hostHeader.replace(/:[0-9]+$/, '');
  const p = a.port || (a.scheme !== '' ? (WELL_KNOWN_PORTS[scheme] ?? port) : port);
  const shown = WELL_KNOWN_PORTS[scheme] === p ? '' : `:${p}`;
  return `${scheme}://${host}${shown}${editPath(req.url, a.path, route)}`;
}
