/**
 * GRPCRoutes attached to a Service (the Gateway API's GAMMA mesh routes) → the same routes HTTPRoutes give
 * (`http-routes.ts`), as istio `pilot/pkg/config/kube/gateway/conversion.go` `convertGRPCRoute` turns them into the
 * HTTP routes of a VirtualService: a gRPC request is an HTTP/2 POST to `/<service>/<method>`, so a method match
 * becomes a path match (`createGRPCURIMatch`), header matches and the header modifier filters are an HTTPRoute's,
 * and backendRefs are resolved as an HTTPRoute's are. Each match of each rule is one route.
 *
 * What the waypoint cannot do answers 500, as for an HTTPRoute: a RequestMirror or ExtensionRef filter, and filters
 * on a backendRef (Istio applies a backendRef's header modifiers to that backend alone; the route model has no
 * per-backend headers). No method match is added: Istio matches any method, as here.
 */
import type { ResourceOf } from '../registry/manifest-dir.js';
import type { GrpcRouteSpec } from '../registry/manifest-schema.js';
import {
  headerModifier,
  isService,
  precedence,
  present,
  serviceRoutes,
  validRegex,
  type BackendModel,
  type HeaderModifierModel,
  type PathMatchModel,
  type RouteActionModel,
  type RouteMatchModel,
  type RouteModel,
  type ServicePorts,
  type ServiceRoutesModel,
  type ValueMatchModel,
} from './http-routes.js';

type Rule = NonNullable<NonNullable<GrpcRouteSpec['rules']>[number]>;
type Match = NonNullable<NonNullable<Rule['matches']>[number]>;

interface RouteTables {
  readonly tables: ReadonlyMap<string, ServiceRoutesModel>;
  readonly warnings: readonly string[];
}

const escapeRegex = (s: string): string => s.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');

/**
 * `re` as one term of a longer regex: grouped when it has an alternation at its top level (`Get|List`), which
 * would otherwise split the whole path's regex; as written otherwise, the text Istio writes.
 */
function term(re: string): string {
  let depth = 0;
  let inClass = false;
  for (let i = 0; i < re.length; i++) {
    const c = re[i];
    if (c === '\\') i++;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) return `(?:${re})`;
  }
  return re;
}

/**
 * The path of a match without a method match: any. Istio leaves such a match without a URI, which its route order
 * (`sortHTTPRoutes`, `getURIRank`) puts after every path match, regexes included; an absent path here ranks as an
 * HTTPRoute's "/" prefix, above regexes, so the path is a regex that takes every path, ranked with the regexes.
 */
const ANY_PATH: PathMatchModel = { regex: '.*' };

/**
 * A `GRPCMethodMatch` as the path it matches, the strings Istio's `createGRPCURIMatch` builds: Exact with both names
 * `/<service>/<method>` exactly; a service alone the prefix `/<service>/` (the model's prefixes are whole segments,
 * so `/<service>` itself is taken too, which no gRPC call is); a method alone the regex `/[^/]+/<method>` (escaped
 * here, which changes nothing for the names the CRD's rules allow); RegularExpression the regex
 * `/<service or [^/]+>/<method or .+>`, the service and method as written, but grouped where an alternation at
 * their top level would leak into the rest of the path (Istio writes `/[^/]+/Get|List`, which Envoy's whole-path
 * match reads as `/[^/]+/Get` or `List`). A reason when it cannot be honoured.
 */
function methodPath(m: Match['method']): PathMatchModel | string {
  if (m == null) return ANY_PATH;
  const service = m.service == null || m.service === '' ? undefined : m.service;
  const method = m.method == null || m.method === '' ? undefined : m.method;
  if (service === undefined && method === undefined) return 'a method match names neither a service nor a method';
  switch (m.type ?? 'Exact') {
    case 'Exact':
      if (method === undefined) return { prefix: `/${service}/` };
      if (service === undefined) return { regex: `/[^/]+/${escapeRegex(method)}` };
      return { exact: `/${service}/${method}` };
    case 'RegularExpression': {
      const regex = `/${service === undefined ? '[^/]+' : term(service)}/${method === undefined ? '.+' : term(method)}`;
      return validRegex(regex) ? { regex } : `method regex ${JSON.stringify(regex)} does not compile`;
    }
    default:
      return `method match type ${String(m.type)} is not supported`;
  }
}

/** One match's model, or why the waypoint cannot honour it. */
function convertMatch(m: Match): RouteMatchModel | string {
  const path = methodPath(m.method);
  if (typeof path === 'string') return path;
  const headers: (ValueMatchModel & { name: string })[] = [];
  const seen = new Set<string>();
  for (const h of present(m.headers)) {
    const name = (h.name ?? '').toLowerCase();
    // As an HTTPRoute's: of several matches on one name (which the CRD's list map refuses), the first counts.
    if (seen.has(name)) continue;
    seen.add(name);
    const value = h.value ?? '';
    if ((h.type ?? 'Exact') === 'Exact') headers.push({ name, exact: value });
    else if (h.type === 'RegularExpression') {
      if (!validRegex(value)) return `regex ${JSON.stringify(value)} for ${name} does not compile`;
      headers.push({ name, regex: value });
    } else return `match type ${String(h.type)} for ${name} is not supported`;
  }
  return { path, headers, queryParams: [], method: '' };
}

/** One GRPCRoute's rules as routes (one per match), unsorted. */
function convertRules(
  route: ResourceOf<'GRPCRoute'>,
  services: ServicePorts,
  domainSuffix: string,
): { routes: RouteModel[]; warnings: string[] } {
  const ns = route.metadata.namespace;
  const name = `${ns}/${route.metadata.name}`;
  const routes: RouteModel[] = [];
  const warnings: string[] = [];
  present(route.spec.rules).forEach((rule, i) => {
    const ruleName = `${name}.${i}`;
    const fail = (why: string): void => {
      warnings.push(`GRPCRoute ${ruleName}: ${why}; its requests are answered 500`);
    };
    let problem: string | undefined;
    let requestHeaders: HeaderModifierModel | undefined;
    let responseHeaders: HeaderModifierModel | undefined;
    for (const f of present(rule.filters)) {
      if (f.type === 'RequestHeaderModifier') requestHeaders = headerModifier(f.requestHeaderModifier);
      else if (f.type === 'ResponseHeaderModifier') responseHeaders = headerModifier(f.responseHeaderModifier);
      else problem = `filter ${String(f.type)} is not supported by the waypoint`;
    }
    const backends: BackendModel[] = present(rule.backendRefs).map((b) => {
      const weight = b.weight ?? 1;
      const bns = b.namespace ?? ns;
      const filters = present(b.filters);
      if (filters.length > 0)
        problem = `backendRef filters (${filters.map((f) => String(f.type)).join(', ')}) are not supported by the waypoint`;
      const unresolved = (why: string): BackendModel => {
        warnings.push(`GRPCRoute ${ruleName}: backendRef ${bns}/${b.name ?? ''}: ${why}`);
        return { namespace: bns, hostname: '', port: 0, weight };
      };
      if (!isService(b)) return unresolved(`kind ${b.kind ?? ''} is not supported`);
      if (bns !== ns) return unresolved('another namespace needs a ReferenceGrant, which the waypoint does not read');
      const ports = services.get(`${bns}/${b.name ?? ''}`);
      if (ports === undefined) return unresolved('no such Service');
      if (b.port == null || !ports.has(b.port))
        return unresolved(`the Service has no port ${b.port ?? '(none given)'}`);
      return { namespace: bns, hostname: `${b.name}.${bns}.svc.${domainSuffix}`, port: b.port, weight };
    });
    let action: RouteActionModel;
    if (problem !== undefined) {
      fail(problem);
      action = { directStatus: 500 };
    } else if (backends.length === 0 || backends.every((b) => b.hostname === '')) action = { directStatus: 500 };
    else action = { forward: backends };
    const base = { name: ruleName, requestHeaders, responseHeaders, action, rewrite: undefined, timeoutMs: undefined };
    const matches = present(rule.matches);
    // Without matches a rule takes every request, and (a route without a match) comes after every other route.
    if (matches.length === 0) routes.push({ ...base, matches: [] });
    for (const m of matches) {
      const match = convertMatch(m);
      if (typeof match === 'string') fail(match);
      else routes.push({ ...base, matches: [match] });
    }
  });
  return { routes, warnings };
}

/**
 * Every Service port's routes from the GRPCRoutes whose parentRefs name a Service, keyed `namespace/hostname:port`
 * (port 0: every port), as `serviceRoutes` builds an HTTPRoute's: a parentRef must name a Service in the route's
 * namespace; a parentRef with a port gets the routes for every port as well; oldest GRPCRoute first, then by
 * precedence.
 */
export function grpcServiceRoutes(
  routes: readonly ResourceOf<'GRPCRoute'>[],
  services: ServicePorts,
  domainSuffix: string,
): RouteTables {
  const warnings: string[] = [];
  const ordered = [...routes].sort(
    (a, b) =>
      (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
      `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`),
  );
  const byParent = new Map<string, { namespace: string; hostname: string; port: number; routes: RouteModel[] }>();
  for (const route of ordered) {
    const ns = route.metadata.namespace;
    const parents = present(route.spec.parentRefs).filter(isService);
    if (parents.length === 0) continue;
    const converted = convertRules(route, services, domainSuffix);
    warnings.push(...converted.warnings);
    for (const p of parents) {
      if ((p.namespace ?? ns) !== ns) {
        warnings.push(
          `GRPCRoute ${ns}/${route.metadata.name}: a parentRef to a Service in another namespace is not served by a waypoint`,
        );
        continue;
      }
      if (!services.has(`${ns}/${p.name ?? ''}`)) continue;
      const hostname = `${p.name}.${ns}.svc.${domainSuffix}`;
      const port = p.port ?? 0;
      const key = `${ns}/${hostname}:${port}`;
      let t = byParent.get(key);
      if (t === undefined) byParent.set(key, (t = { namespace: ns, hostname, port, routes: [] }));
      t.routes.push(...converted.routes);
    }
  }
  for (const t of byParent.values())
    if (t.port !== 0) t.routes.push(...(byParent.get(`${t.namespace}/${t.hostname}:0`)?.routes ?? []));
  const tables = new Map<string, ServiceRoutesModel>();
  for (const [key, t] of byParent) tables.set(key, { ...t, routes: t.routes.sort(precedence) });
  return { tables, warnings };
}

/**
 * The routes of each Service port from its HTTPRoutes and GRPCRoutes together, one table per port as
 * `serviceRoutes` keys them. Istio merges both kinds' VirtualServices for one parent into one
 * (`pilot/pkg/config/kube/gateway/controller.go`, `mergeHTTPRoutes` over both kinds' base VirtualServices in
 * `route_collections.go`), its routes sorted by precedence. The Gateway API calls an HTTPRoute and a GRPCRoute on
 * the same parent a conflict (GRPCRoute's `hostnames`: a Gateway listener accepts only one of them); both are kept
 * here, as Istio keeps them, and among routes of equal precedence the HTTPRoute's come first, where Istio takes the
 * older route's first whatever its kind.
 */
export function mergedServiceRoutes(
  httpRoutes: readonly ResourceOf<'HTTPRoute'>[],
  grpcRoutes: readonly ResourceOf<'GRPCRoute'>[],
  services: ServicePorts,
  domainSuffix: string,
): RouteTables {
  const http = serviceRoutes(httpRoutes, services, domainSuffix);
  if (grpcRoutes.length === 0) return http;
  const grpc = grpcServiceRoutes(grpcRoutes, services, domainSuffix);
  const tables = new Map<string, ServiceRoutesModel>();
  for (const key of new Set([...http.tables.keys(), ...grpc.tables.keys()])) {
    const t = (http.tables.get(key) ?? grpc.tables.get(key))!;
    // A kind without a table for this port still has its routes for every port here.
    const of = (kind: ReadonlyMap<string, ServiceRoutesModel>): readonly RouteModel[] =>
      kind.get(key)?.routes ?? (t.port === 0 ? [] : (kind.get(`${t.namespace}/${t.hostname}:0`)?.routes ?? []));
    const routes = [...of(http.tables), ...of(grpc.tables)].sort(precedence);
    tables.set(key, { namespace: t.namespace, hostname: t.hostname, port: t.port, routes });
  }
  return { tables, warnings: [...http.warnings, ...grpc.warnings] };
}
