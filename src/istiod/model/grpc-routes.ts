/**
 * GRPCRoutes attached to a Service (the Gateway API's GAMMA mesh routes) → the same routes HTTPRoutes give
 * (`http-routes.ts`), as istio `pilot/pkg/config/kube/gateway/conversion.go` `convertGRPCRoute` turns them into the
 * HTTP routes of a VirtualService: a gRPC request is an HTTP/2 POST to `/<service>/<method>`, so a method match
 * becomes a path match (`createGRPCURIMatch`), header matches and the header modifier filters are an HTTPRoute's,
 * and backendRefs are resolved as an HTTPRoute's are. Each match of each rule is one route.
 *
 * What the waypoint cannot do answers 500, as for an HTTPRoute: an ExtensionRef filter, and filters
 * on a backendRef (Istio applies a backendRef's header modifiers to that backend alone; the route model has no
 * per-backend headers). No method match is added: Istio matches any method, as here.
 */
import type { ResourceOf } from '../registry/manifest-dir.js';
import type { GrpcRouteSpec } from '../registry/manifest-schema.js';
import type { GrantShape } from './reference-grants.js';
import {
  headerModifier,
  present,
  requestMirror,
  resolveBackend,
  validRegex,
  type ConvertedRoute,
  type HeaderModifierModel,
  type MirrorModel,
  type PathMatchModel,
  type RouteActionModel,
  type RouteMatchModel,
  type RouteModel,
  type ServicePorts,
  type ValueMatchModel,
} from './http-routes.js';

type Rule = NonNullable<NonNullable<GrpcRouteSpec['rules']>[number]>;
type Match = NonNullable<NonNullable<Rule['matches']>[number]>;

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
  grants: readonly GrantShape[],
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
    const mirrors: MirrorModel[] = [];
    const referrer = { kind: 'GRPCRoute', namespace: ns, grants };
    for (const f of present(rule.filters)) {
      if (f.type === 'RequestHeaderModifier') requestHeaders = headerModifier(f.requestHeaderModifier);
      else if (f.type === 'ResponseHeaderModifier') responseHeaders = headerModifier(f.responseHeaderModifier);
      else if (f.type === 'RequestMirror') {
        const m = requestMirror(f.requestMirror ?? {}, referrer, services, domainSuffix, (why) =>
          warnings.push(`GRPCRoute ${ruleName}: ${why}`),
        );
        if (m !== undefined) mirrors.push(m);
      } else problem = `filter ${String(f.type)} is not supported by the waypoint`;
    }
    const backends = present(rule.backendRefs).map((b) => {
      const filters = present(b.filters);
      if (filters.length > 0)
        problem = `backendRef filters (${filters.map((f) => String(f.type)).join(', ')}) are not supported by the waypoint`;
      return resolveBackend(b, referrer, services, domainSuffix, (why) =>
        warnings.push(`GRPCRoute ${ruleName}: ${why}`),
      );
    });
    let action: RouteActionModel;
    if (problem !== undefined) {
      fail(problem);
      action = { directStatus: 500 };
    } else if (backends.length === 0 || backends.every((b) => b.hostname === '')) action = { directStatus: 500 };
    else action = { forward: backends };
    const base = {
      name: ruleName,
      requestHeaders,
      responseHeaders,
      action,
      rewrite: undefined,
      timeoutMs: undefined,
      ...(mirrors.length > 0 && problem === undefined ? { mirrors } : {}),
    };
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

/** One GRPCRoute's routes, one per match of each rule, as an HTTPRoute's are (`convertHttpRoute`). */
export function convertGrpcRoute(
  route: ResourceOf<'GRPCRoute'>,
  services: ServicePorts,
  domainSuffix: string,
  grants: readonly GrantShape[] = [],
): ConvertedRoute {
  const { metadata, spec } = route;
  const c = convertRules(route, services, domainSuffix, grants);
  return {
    kind: 'GRPCRoute',
    namespace: metadata.namespace,
    name: metadata.name,
    parentRefs: present(spec.parentRefs),
    ...c,
  };
}
