/**
 * Gateway API TLSRoutes and TCPRoutes → what an ingress gateway relays, as istio
 * `pilot/pkg/config/kube/gateway/conversion.go` converts them for the `istio` class: each rule becomes one route
 * without matches whose backends are picked by weight per connection (a TLSRoute's by the SNI of the listener's
 * virtual host, a TCPRoute's for every connection). backendRefs resolve as an HTTPRoute's do; one that cannot be
 * resolved keeps its weight, and a connection picked for it is refused.
 */
import type { ResourceOf } from '../registry/manifest-dir.js';
import {
  present,
  resolveBackend,
  type ConvertedRoute,
  type RouteActionModel,
  type RouteModel,
  type ServicePorts,
} from './http-routes.js';
import type { GrantShape } from './reference-grants.js';

export function convertL4Route(
  route: ResourceOf<'TLSRoute'> | ResourceOf<'TCPRoute'>,
  services: ServicePorts,
  domainSuffix: string,
  grants: readonly GrantShape[],
): ConvertedRoute {
  const ns = route.metadata.namespace;
  const name = `${ns}/${route.metadata.name}`;
  const warnings: string[] = [];
  const routes: RouteModel[] = present(route.spec.rules).map((rule, i) => {
    const backends = present(rule.backendRefs).map((b) =>
      resolveBackend(b, { kind: route.kind, namespace: ns, grants }, services, domainSuffix, (why) =>
        warnings.push(`${route.kind} ${name}.${i}: ${why}`),
      ),
    );
    const action: RouteActionModel =
      backends.length === 0 || backends.every((b) => b.hostname === '') ? { directStatus: 500 } : { forward: backends };
    return {
      name: `${name}.${i}`,
      matches: [],
      requestHeaders: undefined,
      responseHeaders: undefined,
      action,
      rewrite: undefined,
      timeoutMs: undefined,
    };
  });
  return {
    kind: route.kind,
    namespace: ns,
    name: route.metadata.name,
    parentRefs: present(route.spec.parentRefs),
    routes,
    warnings,
  };
}
