/**
 * Istio's VirtualService (networking.istio.io) → the routes a gateway applies, as Envoy's routes from istio
 * `pilot/pkg/networking/core/route/route.go` behave:
 * - each `http` entry's matches become one route each (an entry without matches, one route for every request), in
 *   the order written: a VirtualService's routes are tried in order, not by precedence;
 * - `uri` exact, prefix (character by character, not by segments) and regex; headers, query parameters and the
 *   method by exact, prefix or regex (a prefix is sent as a regex); `port` keeps a match to that listener port;
 * - `route` destinations by weight, a short host taken in the VirtualService's namespace; a destination that cannot
 *   be resolved (no such Service or port) keeps its weight and has its share answered 500, as a rule the proxy
 *   cannot follow is answered rather than routed as if it said less; a `subset` takes its labels from
 *   DestinationRules (`destination-rules.ts`);
 * - `redirect` (301 unless `redirectCode` says otherwise), `rewrite` (the matched prefix, or for other matches the
 *   whole path, and the authority), `directResponse` (its status), `timeout`, the entry's `headers`, and `fault`
 *   (a share of the requests delayed, and a share answered with a status, as Envoy's fault filter does).
 * A match it cannot evaluate (a method by prefix or regex, a match restricted to gateways) is left out, and the
 * entry's other matches answer 500. `retries` (status codes among `retryOn` as Istio reads them, `perTryTimeout`)
 * and `mirror`/`mirrors` are sent; `corsPolicy` and per-destination headers are not applied; istiod says so.
 * `tls` and `tcp` entries become routes too (`tlsRoutes`, `tcpRoutes`), one per match, for a gateway's passthrough
 * TLS and TCP servers (`istio-gateways.ts`).
 */
import type { ResourceOf } from '../registry/manifest-dir.js';
import type { VirtualServiceSpec } from '../registry/manifest-schema.js';
import type { SubsetLookup } from './destination-rules.js';
import {
  present,
  validRegex,
  type BackendModel,
  type HeaderModifierModel,
  type MirrorModel,
  type PathMatchModel,
  type PathRewriteModel,
  type RouteActionModel,
  type RouteMatchModel,
  type RouteModel,
  type ServicePorts,
  type ValueMatchModel,
} from './http-routes.js';

type Http = NonNullable<NonNullable<VirtualServiceSpec['http']>[number]>;
type Destination = Http['mirror'];
type Strings = readonly (string | null)[] | null;
type StringMatch = { exact?: string | null; prefix?: string | null; regex?: string | null } | null | undefined;
type HeaderOps = NonNullable<Http['headers']>['request'];

/** A route, with the listener port its match names (0: any). */
export interface VirtualServiceRoute {
  readonly route: RouteModel;
  readonly port: number;
}

/** A `tls` route (by SNI: its match's `sniHosts`) or a `tcp` one (no `sniHosts`), with its match's port (0: any). */
export interface VirtualServiceL4Route {
  readonly sniHosts: readonly string[];
  readonly port: number;
  readonly route: RouteModel;
}

export interface ConvertedVirtualService {
  readonly namespace: string;
  readonly name: string;
  /** Its hosts, a short name taken in its namespace. */
  readonly hosts: readonly string[];
  /** The gateways it binds to, as `<namespace>/<name>` (`mesh` left out). */
  readonly gateways: readonly string[];
  /** It applies to the mesh (no `gateways`, or `mesh` among them): to the Services of its hosts, at their waypoint. */
  readonly mesh: boolean;
  readonly routes: readonly VirtualServiceRoute[];
  /** Its `tls` routes, then its `tcp` ones, in the order written: the first that matches a connection takes it. */
  readonly tlsRoutes: readonly VirtualServiceL4Route[];
  readonly tcpRoutes: readonly VirtualServiceL4Route[];
  readonly warnings: readonly string[];
}

const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A StringMatch as a value match: exact, or a regex (a prefix as one); a string says why it cannot be. */
function valueMatch(m: StringMatch): ValueMatchModel | string {
  if (m?.exact != null) return { exact: m.exact };
  if (m?.prefix != null) return { regex: `${escapeRegex(m.prefix)}.*` };
  if (m?.regex != null)
    return validRegex(m.regex) ? { regex: m.regex } : `regex ${JSON.stringify(m.regex)} does not compile`;
  return 'an empty match';
}

/** A protobuf Duration as JSON writes it (`5s`, `0.5s`, `100ms` is not one but Istio's CLI accepts it). */
export function protoDuration(s: string): number | undefined {
  const m = /^([0-9]+(?:\.[0-9]+)?)(s|ms|m|h)$/.exec(s.trim());
  if (m === null) return undefined;
  const unit = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 } as const;
  return Math.round(Number(m[1]) * unit[m[2] as keyof typeof unit]);
}

/** A VirtualService host as a Service hostname: a short name in `namespace`, `name.ns` completed. */
export function qualifiedHost(host: string, namespace: string, domainSuffix: string): string {
  if (host === '*' || host.startsWith('*.')) return host;
  const dots = host.split('.').length - 1;
  if (dots === 0) return `${host}.${namespace}.svc.${domainSuffix}`;
  if (dots === 1) return `${host}.svc.${domainSuffix}`;
  return host;
}

function headerOps(h: HeaderOps): HeaderModifierModel | undefined {
  if (h == null) return undefined;
  const pairs = (m: Record<string, string | null> | null | undefined): { name: string; value: string }[] =>
    Object.entries(m ?? {}).map(([name, value]) => ({ name: name.toLowerCase(), value: value ?? '' }));
  return { set: pairs(h.set), add: pairs(h.add), remove: present(h.remove).map((r) => r.toLowerCase()) };
}

export function convertVirtualService(
  vs: ResourceOf<'VirtualService'>,
  services: ServicePorts,
  domainSuffix: string,
  subsets: SubsetLookup = () => undefined,
): ConvertedVirtualService {
  const ns = vs.metadata.namespace;
  const name = `${ns}/${vs.metadata.name}`;
  const warnings: string[] = [];
  const routes: VirtualServiceRoute[] = [];
  /**
   * A destination as a backend: a short host taken in the VirtualService's namespace, the Service's only port when
   * none is given, a subset's labels from DestinationRules. One that cannot be resolved has no hostname, and
   * `unresolved` says why.
   */
  const destination = (
    d: Destination | null | undefined,
    weight: number,
    unresolved: (host: string, why: string) => void,
  ): BackendModel => {
    const host = qualifiedHost(d?.host ?? '', ns, domainSuffix);
    const fail = (why: string): BackendModel => {
      unresolved(host, why);
      return { namespace: ns, hostname: '', port: 0, weight };
    };
    const m = new RegExp(`^([^.]+)\\.([^.]+)\\.svc\\.${escapeRegex(domainSuffix)}$`).exec(host);
    const ports = m === null ? undefined : services.get(`${m[2]}/${m[1]}`);
    if (m === null || ports === undefined) return fail('no such Service');
    const port = d?.port?.number ?? (ports.size === 1 ? [...ports][0]! : undefined);
    if (port === undefined || !ports.has(port))
      return fail(`the Service has no port ${port ?? '(none given, and it has several)'}`);
    const backend = { namespace: m[2]!, hostname: host, port, weight };
    if (d?.subset == null) return backend;
    const labels = subsets(backend.namespace, host, d.subset);
    if (labels === undefined)
      warnings.push(
        `VirtualService ${name}: subset ${d.subset} of ${host} is not defined by a DestinationRule; its requests are answered 503`,
      );
    return { ...backend, subset: { name: d.subset, labels } };
  };
  /** An entry's mirrors: `mirror` (with `mirrorPercentage`, or the older `mirrorPercent`; unset: every request) and `mirrors`. */
  const mirrorsOf = (http: Http, unresolved: (host: string, why: string) => void): MirrorModel[] => {
    const out: MirrorModel[] = [];
    const add = (d: Destination | null | undefined, share: number): void => {
      const backend = destination(d, 1, unresolved);
      if (backend.hostname !== '') out.push({ backend, percentage: share });
    };
    if (http.mirror != null)
      add(http.mirror, http.mirrorPercentage != null ? percentage(http.mirrorPercentage) : (http.mirrorPercent ?? 100));
    for (const m of present(http.mirrors)) add(m.destination, percentage(m.percentage));
    return out;
  };
  const gateways = present(vs.spec.gateways)
    .filter((g) => g !== 'mesh')
    .map((g) => (g.includes('/') ? g : `${ns}/${g}`));
  present(vs.spec.http).forEach((http, i) => {
    const entry = `${name}.${i}`;
    const problems: string[] = [];
    if ((http as Record<string, unknown>)['corsPolicy'] != null)
      warnings.push(`VirtualService ${entry}: CORS is not applied by amesh's waypoints and gateways`);
    const mirrors = mirrorsOf(http, (host, why) =>
      warnings.push(`VirtualService ${entry}: mirror ${host}: ${why}; nothing is mirrored there`),
    );
    let action: RouteActionModel;
    if (http.redirect != null) {
      const r = http.redirect;
      action = {
        redirect: {
          scheme: r.scheme ?? '',
          hostname: r.authority ?? '',
          port: r.port ?? 0,
          path: r.uri == null ? undefined : { full: r.uri },
          statusCode: r.redirectCode ?? 301,
        },
      };
    } else if (http.directResponse != null) {
      action = { directStatus: http.directResponse.status ?? 200 };
    } else {
      const backends = present(http.route).map((d): BackendModel => {
        if (d.headers != null) warnings.push(`VirtualService ${entry}: per-destination headers are not applied`);
        return destination(d.destination, d.weight ?? (present(http.route).length === 1 ? 100 : 0), (host, why) =>
          warnings.push(`VirtualService ${entry}: destination ${host}: ${why}; its share is answered 500`),
        );
      });
      action =
        backends.length === 0 || backends.every((b) => b.hostname === '')
          ? { directStatus: 500 }
          : { forward: backends };
      if (backends.length === 0) problems.push('no route, redirect or directResponse');
    }
    let timeoutMs: number | undefined;
    if (http.timeout != null) {
      timeoutMs = protoDuration(http.timeout);
      if (timeoutMs === undefined) problems.push(`timeout ${JSON.stringify(http.timeout)} is not a duration`);
    }
    const fault = faultOf(http.fault, (why) => problems.push(why));
    const retries = retriesOf(http.retries, (why) => problems.push(why));
    const requestHeaders = headerOps(http.headers?.request);
    const responseHeaders = headerOps(http.headers?.response);
    const matches = present(http.match);
    const converted = (matches.length === 0 ? [{}] : matches).map(convertMatch);
    for (const c of converted) if (typeof c === 'string') problems.push(c);
    for (const c of converted) {
      if (typeof c === 'string') continue;
      let path = c.match.path;
      // Istio rewrites a prefix match's prefix; with no uri match the implicit prefix is "/".
      if (http.rewrite?.uri != null && path === undefined) path = { stringPrefix: '/' };
      let rewritten: RouteModel['rewrite'];
      if (http.rewrite != null) {
        const uri = http.rewrite.uri;
        let rewrittenPath: PathRewriteModel | undefined;
        if (uri != null) rewrittenPath = path !== undefined && 'stringPrefix' in path ? { prefix: uri } : { full: uri };
        rewritten = { hostname: http.rewrite.authority ?? '', path: rewrittenPath };
      }
      routes.push({
        port: c.port,
        route: {
          name: entry,
          matches: [{ ...c.match, path }],
          requestHeaders,
          responseHeaders,
          action: problems.length > 0 ? { directStatus: 500 } : action,
          rewrite: problems.length > 0 ? undefined : rewritten,
          timeoutMs,
          ...(fault === undefined ? {} : { fault }),
          ...(retries === undefined ? {} : { retries }),
          ...(mirrors.length > 0 && problems.length === 0 ? { mirrors } : {}),
        },
      });
    }
    for (const p of problems) warnings.push(`VirtualService ${entry}: ${p}; its requests are answered 500`);
  });
  /** The `tls` or `tcp` entries as routes: one per match (an entry without matches, one for any connection). */
  const l4 = (kind: 'tls' | 'tcp'): VirtualServiceL4Route[] => {
    const out: VirtualServiceL4Route[] = [];
    present(vs.spec[kind]).forEach((e, i) => {
      const entry = `${name}.${kind}.${i}`;
      const routes = present(e.route);
      const backends = routes.map((d) =>
        destination(d.destination, d.weight ?? (routes.length === 1 ? 100 : 0), (host, why) =>
          warnings.push(`VirtualService ${entry}: destination ${host}: ${why}; its share is refused`),
        ),
      );
      const action: RouteActionModel =
        backends.length === 0 || backends.every((b) => b.hostname === '')
          ? { directStatus: 500 }
          : { forward: backends };
      const route: RouteModel = {
        name: entry,
        matches: [],
        requestHeaders: undefined,
        responseHeaders: undefined,
        action,
        rewrite: undefined,
        timeoutMs: undefined,
      };
      const matches: { sniHosts?: readonly (string | null)[] | null; port?: number | null; gateways?: Strings }[] =
        present(e.match);
      for (const m of matches.length === 0 ? [{}] : matches) {
        if (present(m.gateways).length > 0) {
          warnings.push(`VirtualService ${entry}: a match restricted to gateways is not supported; it is left out`);
          continue;
        }
        out.push({ sniHosts: present(m.sniHosts), port: m.port ?? 0, route });
      }
    });
    return out;
  };
  return {
    namespace: ns,
    name: vs.metadata.name,
    tlsRoutes: l4('tls'),
    tcpRoutes: l4('tcp'),
    hosts: present(vs.spec.hosts).map((h) => (h.includes('.') || h === '*' ? h : qualifiedHost(h, ns, domainSuffix))),
    gateways,
    mesh: present(vs.spec.gateways).length === 0 || present(vs.spec.gateways).includes('mesh'),
    routes,
    warnings,
  };
}

/**
 * An entry's retries as istio `pilot/pkg/networking/core/route/retry/retry.go` converts them: numbers among
 * `retryOn` are statuses to retry (`retriable-status-codes` added for them), `attempts` 0 turns retries off.
 */
function retriesOf(r: Http['retries'], problem: (why: string) => void): RouteModel['retries'] {
  if (r == null) return undefined;
  const retryOn: string[] = [];
  const statusCodes: number[] = [];
  for (const c of (r.retryOn ?? '').split(',').map((x) => x.trim())) {
    if (c === '') continue;
    if (/^[0-9]+$/.test(c)) statusCodes.push(Number(c));
    else retryOn.push(c);
  }
  if (statusCodes.length > 0 && !retryOn.includes('retriable-status-codes')) retryOn.push('retriable-status-codes');
  let perTryTimeoutMs: number | undefined;
  if (r.perTryTimeout != null) {
    perTryTimeoutMs = protoDuration(r.perTryTimeout);
    if (perTryTimeoutMs === undefined)
      problem(`retries perTryTimeout ${JSON.stringify(r.perTryTimeout)} is not a duration`);
  }
  return { attempts: Math.max(0, r.attempts ?? 0), retryOn, statusCodes, perTryTimeoutMs };
}

/** Istio's Percent: a share of 100; unset: every request. */
function percentage(p: { value?: unknown } | null | undefined): number {
  const v = p?.value;
  return typeof v === 'number' && v >= 0 && v <= 100 ? v : 100;
}

/** An entry's fault injection; `problem` says why one cannot be applied. */
function faultOf(f: Http['fault'], problem: (why: string) => void): RouteModel['fault'] {
  if (f == null) return undefined;
  let delay: NonNullable<RouteModel['fault']>['delay'];
  if (f.delay != null) {
    const ms = protoDuration(f.delay.fixedDelay ?? '');
    if (ms === undefined) problem(`fault delay ${JSON.stringify(f.delay.fixedDelay)} is not a duration`);
    else delay = { ms, percentage: percentage(f.delay.percentage) };
  }
  let abort: NonNullable<RouteModel['fault']>['abort'];
  if (f.abort != null) {
    const status = f.abort.httpStatus ?? 0;
    if (status < 200 || status > 599) problem(`fault abort status ${status} is not an HTTP status`);
    else abort = { httpStatus: status, percentage: percentage(f.abort.percentage) };
  }
  return { ...(delay === undefined ? {} : { delay }), ...(abort === undefined ? {} : { abort }) };
}

type HttpMatch = NonNullable<NonNullable<Http['match']>[number]>;

/** One match of an `http` entry, or why it cannot be followed. */
function convertMatch(m: HttpMatch | Record<string, never>): { match: RouteMatchModel; port: number } | string {
  const match = m as Partial<HttpMatch>;
  let path: PathMatchModel | undefined;
  const uri = match.uri;
  if (uri?.exact != null) path = { exact: uri.exact };
  else if (uri?.prefix != null) path = uri.prefix === '/' ? undefined : { stringPrefix: uri.prefix };
  else if (uri?.regex != null) {
    if (!validRegex(uri.regex)) return `uri regex ${JSON.stringify(uri.regex)} does not compile`;
    path = { regex: uri.regex };
  }
  const values = (
    m: Record<string, StringMatch> | null | undefined,
    lower: boolean,
  ): (ValueMatchModel & { name: string })[] | string => {
    const out: (ValueMatchModel & { name: string })[] = [];
    for (const [k, v] of Object.entries(m ?? {})) {
      const value = valueMatch(v);
      if (typeof value === 'string') return `${k}: ${value}`;
      out.push({ name: lower ? k.toLowerCase() : k, ...value });
    }
    return out;
  };
  const headers = values(match.headers, true);
  if (typeof headers === 'string') return headers;
  const queryParams = values(match.queryParams, false);
  if (typeof queryParams === 'string') return queryParams;
  let method = '';
  if (match.method != null) {
    if (match.method.exact == null) return 'a method matched other than exactly';
    method = match.method.exact;
  }
  if (present(match.gateways).length > 0) return 'a match restricted to gateways is not supported';
  return { match: { path, headers, queryParams, method }, port: match.port ?? 0 };
}
