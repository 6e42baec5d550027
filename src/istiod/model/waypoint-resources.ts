/**
 * The `amesh.waypoint.v1.Waypoint` resource of each waypoint and ingress gateway (docs/waypoint-xds.md): the routes
 * of the Services bound to a waypoint (their HTTPRoutes and GRPCRoutes), an ingress gateway's listeners with the
 * routes attached to them (`gateway-listeners.ts`), and the AuthorizationPolicies and RequestAuthentications that
 * target the Gateway, its class, or those Services. A Service or ServiceEntry belongs to the waypoint its binding
 * names (the same binding served in the Service's `waypoint` field, `serviceWaypoint`). Each resource is named
 * `<namespace>/<Deployment>` after the proxy that subscribes to it (its `ISTIO_META_WORKLOAD_NAME`): the Gateway's
 * name for a waypoint, `<Gateway>-istio` for an ingress gateway.
 */
import type { Resource, ResourceOf } from '../registry/manifest-dir.js';
import { convertGrpcRoute } from './grpc-routes.js';
import {
  byAge,
  convertHttpRoute,
  hasServiceParent,
  present,
  routeTables,
  type BackendModel,
  type RouteModel,
  type ServicePorts,
  type ServiceRoutesModel,
} from './http-routes.js';
import { serviceEntryHosts, servicePorts } from './services.js';
import { serviceWaypoint, type WaypointInputs } from './waypoints.js';
import { convertWaypointPolicy, policyTargets, type L7PolicyModel } from './waypoint-policies.js';
import { convertRequestAuthentication, type RequestAuthenticationModel } from './request-authentication.js';
import type { ExtAuthzProviderModel } from './extension-providers.js';
import { convertVirtualService, type VirtualServiceRoute } from './virtual-services.js';
import { destinationRules, withSubsetEndpoints, withTrafficPolicy, type SubsetCandidate } from './destination-rules.js';
import { grantShape } from './reference-grants.js';
import { convertL4Route } from './l4-routes.js';
import type { TrafficPolicyModel } from './traffic-policies.js';
import { istioGatewayListeners } from './istio-gateways.js';
import { gatewayNames } from '../gateway/gateway-template.js';
import { GATEWAY_CONTROLLER } from '../gateway/gateway-classes.js';
import {
  gatewayListeners,
  gatewayShape,
  refersToGateway,
  routeShape,
  type GatewayListenerModel,
} from './gateway-listeners.js';

export interface WaypointResourceModel {
  readonly services: readonly ServiceRoutesModel[];
  readonly policies: readonly L7PolicyModel[];
  readonly requestAuthentications: readonly RequestAuthenticationModel[];
  /** The providers its CUSTOM policies name. */
  readonly extAuthzProviders: readonly ExtAuthzProviderModel[];
  /** An ingress gateway's listeners; none for a waypoint. */
  readonly listeners: readonly GatewayListenerModel[];
  /** Log each request (meshConfig.accessLogFile). */
  readonly accessLog: boolean;
  /** The traffic policies of the Services behind it, per port, for requests no route sends elsewhere. */
  readonly servicePolicies: readonly ServicePolicyModel[];
}

export interface ServicePolicyModel {
  readonly namespace: string;
  readonly hostname: string;
  readonly port: number;
  readonly trafficPolicy: TrafficPolicyModel;
}

export interface WaypointResourceInputs {
  readonly domainSuffix: string;
  readonly trustDomain: string;
  readonly rootNamespace: string;
  /** meshConfig.extensionProviders by name, which CUSTOM policies may name. */
  readonly providers: ReadonlyMap<string, ExtAuthzProviderModel>;
  /** meshConfig.accessLogFile is set: every proxy logs each request. */
  readonly accessLog: boolean;
}

/** `namespace/name` of the waypoint a GatewayAddress names (its Service's hostname is `<name>.<namespace>.svc…`). */
function waypointKey(inputs: WaypointInputs, address: ReturnType<typeof serviceWaypoint>): string | undefined {
  if (address === undefined) return undefined;
  for (const [key, w] of inputs.waypoints) if (w.address === address) return key;
  return undefined;
}

/** Every waypoint's and ingress gateway's resource, keyed `namespace/<Deployment>`, with the conversions' warnings. */
export function waypointResources(
  objects: readonly Resource[],
  waypoints: WaypointInputs,
  cfg: WaypointResourceInputs,
): { readonly resources: ReadonlyMap<string, WaypointResourceModel>; readonly warnings: readonly string[] } {
  const warnings: string[] = [];
  const kubeServices = objects.filter((o): o is ResourceOf<'Service'> => o.kind === 'Service');
  const serviceEntries = objects.filter((o): o is ResourceOf<'ServiceEntry'> => o.kind === 'ServiceEntry');
  const ports: ServicePorts = new Map(
    kubeServices.map((s) => [
      `${s.metadata.namespace}/${s.metadata.name}`,
      new Set(servicePorts(s).map((p) => p.port)),
    ]),
  );
  /** Which waypoint each Service and ServiceEntry host belongs to, by `namespace/hostname`. */
  const boundTo = new Map<string, string>();
  /** `namespace/name` of a Service or ServiceEntry → its hostnames. */
  const hostsOf = new Map<string, string[]>();
  for (const s of kubeServices) {
    const hostname = `${s.metadata.name}.${s.metadata.namespace}.svc.${cfg.domainSuffix}`;
    hostsOf.set(`Service/${s.metadata.namespace}/${s.metadata.name}`, [hostname]);
    const w = waypointKey(waypoints, serviceWaypoint(waypoints, s.metadata));
    if (w !== undefined) boundTo.set(`${s.metadata.namespace}/${hostname}`, w);
  }
  for (const se of serviceEntries) {
    const hosts = serviceEntryHosts(se);
    hostsOf.set(`ServiceEntry/${se.metadata.namespace}/${se.metadata.name}`, hosts);
    const w = waypointKey(waypoints, serviceWaypoint(waypoints, se.metadata));
    if (w !== undefined) for (const h of hosts) boundTo.set(`${se.metadata.namespace}/${h}`, w);
  }
  const controllers = new Map(
    objects.flatMap((o) => (o.kind === 'GatewayClass' ? [[o.metadata.name, o.spec['controllerName']] as const] : [])),
  );
  const gateways = new Map<string, ResourceOf<'Gateway'>>(
    objects.flatMap((o) => (o.kind === 'Gateway' ? [[`${o.metadata.namespace}/${o.metadata.name}`, o] as const] : [])),
  );
  const ingress = [...gateways.values()].filter((g) => controllers.get(g.spec.gatewayClassName) === GATEWAY_CONTROLLER);
  const resources = new Map<
    string,
    {
      services: ServiceRoutesModel[];
      policies: L7PolicyModel[];
      requestAuthentications: RequestAuthenticationModel[];
      listeners: GatewayListenerModel[];
    }
  >(
    [...waypoints.waypoints.keys(), ...ingress.map((g) => `${g.metadata.namespace}/${g.metadata.name}`)].map((k) => [
      k,
      { services: [], policies: [], requestAuthentications: [], listeners: [] },
    ]),
  );
  // Both kinds' routes of a Service port in one table, as Istio merges both kinds' VirtualServices for one parent
  // (`pilot/pkg/config/kube/gateway/route_collections.go`). The Gateway API calls an HTTPRoute and a GRPCRoute on
  // one parent a conflict; both are kept, as Istio keeps them, and among routes of equal precedence the HTTPRoute's
  // come first (Istio takes the older route's first, whatever its kind).
  const httpRoutes = objects.filter((o): o is ResourceOf<'HTTPRoute'> => o.kind === 'HTTPRoute');
  const grpcRoutes = objects.filter((o): o is ResourceOf<'GRPCRoute'> => o.kind === 'GRPCRoute');
  const grants = objects.flatMap((o) =>
    o.kind === 'ReferenceGrant' ? [grantShape(o.metadata.namespace, o.spec)] : [],
  );
  const converted = [
    ...byAge(httpRoutes).map((r) => ({ r, c: convertHttpRoute(r, ports, cfg.domainSuffix, grants) })),
    ...byAge(grpcRoutes).map((r) => ({ r, c: convertGrpcRoute(r, ports, cfg.domainSuffix, grants) })),
  ];
  const routes = routeTables(
    converted.filter(({ r }) => hasServiceParent(r)).map(({ c }) => c),
    ports,
    cfg.domainSuffix,
  );
  warnings.push(...routes.warnings);
  const namespaceLabels = new Map(
    objects.flatMap((o) => (o.kind === 'Namespace' ? [[o.metadata.name, o.metadata.labels] as const] : [])),
  );
  /** `namespace/hostname` of the Services an ingress gateway reaches through their waypoint. */
  const ingressViaWaypoint = new Set<string>();
  for (const s of [...kubeServices, ...serviceEntries]) {
    const { namespace, name, labels } = s.metadata;
    const use = ingressUseWaypoint(labels, namespaceLabels.get(namespace), (v) =>
      warnings.push(
        `${s.kind} ${namespace}/${name}: ${INGRESS_USE_WAYPOINT} is ${JSON.stringify(v)}, not a boolean; taken as false`,
      ),
    );
    if (use)
      for (const h of hostsOf.get(`${s.kind}/${namespace}/${name}`) ?? [])
        if (boundTo.has(`${namespace}/${h}`)) ingressViaWaypoint.add(`${namespace}/${h}`);
  }
  if (ingress.length > 0) {
    const l4 = byAge(
      objects.filter(
        (o): o is ResourceOf<'TLSRoute'> | ResourceOf<'TCPRoute'> => o.kind === 'TLSRoute' || o.kind === 'TCPRoute',
      ),
    ).map((r) => ({ r, c: convertL4Route(r, ports, cfg.domainSuffix, grants) }));
    const all = [...converted, ...l4];
    const shapes = all.map(({ r, c }) => ({
      shape: routeShape(r.kind, r.metadata.namespace, r.metadata.name, r.spec),
      routes: c.routes,
    }));
    for (const { r, c } of all)
      if (
        ingress.some((g) =>
          present(r.spec.parentRefs).some((p) => refersToGateway(p, g.metadata, r.metadata.namespace)),
        )
      )
        warnings.push(...c.warnings);
    for (const g of ingress) {
      const key = `${g.metadata.namespace}/${g.metadata.name}`;
      const listeners = gatewayListeners(
        gatewayShape(g.metadata.namespace, g.metadata.name, g.spec),
        shapes,
        grants,
        namespaceLabels,
      );
      resources.get(key)!.listeners.push(...listeners);
    }
  }
  for (const t of routes.tables.values()) {
    const w = boundTo.get(`${t.namespace}/${t.hostname}`);
    if (w !== undefined) resources.get(w)?.services.push(t);
  }
  // VirtualServices for the mesh, on the waypoint of each Service they name (istio's ambient waypoints apply them):
  // their routes in their own order, oldest VirtualService first; a Service's HTTPRoutes take precedence.
  const drs = destinationRules(
    objects.filter((o): o is ResourceOf<'DestinationRule'> => o.kind === 'DestinationRule'),
    cfg.domainSuffix,
    cfg.rootNamespace,
  );
  warnings.push(...drs.warnings);
  /** By waypoint: the traffic policy of each port of the Services bound to it that have one. */
  const servicePolicies = new Map<string, ServicePolicyModel[]>();
  for (const s of kubeServices) {
    const hostname = `${s.metadata.name}.${s.metadata.namespace}.svc.${cfg.domainSuffix}`;
    const w = boundTo.get(`${s.metadata.namespace}/${hostname}`);
    if (w === undefined) continue;
    for (const port of ports.get(`${s.metadata.namespace}/${s.metadata.name}`) ?? []) {
      const trafficPolicy = drs.trafficPolicy(s.metadata.namespace, hostname, undefined, port);
      if (trafficPolicy === undefined) continue;
      let l = servicePolicies.get(w);
      if (l === undefined) servicePolicies.set(w, (l = []));
      l.push({ namespace: s.metadata.namespace, hostname, port, trafficPolicy });
    }
  }
  const allVirtualServices = byAge(
    objects.filter((o): o is ResourceOf<'VirtualService'> => o.kind === 'VirtualService'),
  ).map((vs) => convertVirtualService(vs, ports, cfg.domainSuffix, drs.subsets));
  const meshRoutes = new Map<string, { namespace: string; hostname: string; routes: VirtualServiceRoute[] }>();
  for (const vs of allVirtualServices.filter((v) => v.mesh))
    for (const host of vs.hosts) {
      const ns = host.split('.')[1] ?? '';
      if (boundTo.get(`${ns}/${host}`) === undefined) continue;
      if ([...routes.tables.values()].some((t) => t.namespace === ns && t.hostname === host)) {
        warnings.push(
          `VirtualService ${vs.namespace}/${vs.name}: ${host} has HTTPRoutes, which its waypoint applies instead`,
        );
        continue;
      }
      let m = meshRoutes.get(`${ns}/${host}`);
      if (m === undefined) meshRoutes.set(`${ns}/${host}`, (m = { namespace: ns, hostname: host, routes: [] }));
      m.routes.push(...vs.routes);
    }
  for (const [key, m] of meshRoutes) {
    const w = resources.get(boundTo.get(key)!);
    const portsNamed = [...new Set(m.routes.map((r) => r.port))].filter((p) => p !== 0);
    for (const port of [0, ...portsNamed])
      w?.services.push({
        namespace: m.namespace,
        hostname: m.hostname,
        port,
        routes: m.routes.filter((r) => r.port === 0 || r.port === port).map((r) => r.route),
      });
  }
  /**
   * The waypoints a targeted policy attaches to: each with the Services it covers there (`namespace/hostname`),
   * none when it targets the waypoint itself (or every waypoint, through the class).
   */
  const attach = (
    o: ResourceOf<'AuthorizationPolicy'> | ResourceOf<'RequestAuthentication'>,
  ): Map<string, string[]> => {
    const targets = policyTargets(o, cfg.rootNamespace);
    if (targets.unknown.length > 0)
      warnings.push(
        `${o.kind} ${o.metadata.namespace}/${o.metadata.name}: targetRefs ${targets.unknown.join(', ')} are not enforced by a waypoint`,
      );
    const out = new Map<string, string[]>();
    for (const ref of [
      ...targets.services.map((s) => `Service/${s}`),
      ...targets.serviceEntries.map((s) => `ServiceEntry/${s}`),
    ])
      for (const h of hostsOf.get(ref) ?? []) {
        const key = `${o.metadata.namespace}/${h}`;
        const w = boundTo.get(key);
        if (w === undefined) continue;
        let l = out.get(w);
        if (l === undefined) out.set(w, (l = []));
        l.push(key);
      }
    for (const w of targets.allWaypoints
      ? [...waypoints.waypoints.keys()]
      : targets.gateways.filter((g) => resources.has(g)))
      out.set(w, []);
    for (const l of out.values()) l.sort();
    return out;
  };
  for (const o of objects) {
    if (o.kind === 'AuthorizationPolicy') {
      const at = attach(o);
      if (at.size === 0) continue;
      const c = convertWaypointPolicy(o, cfg.trustDomain, cfg.providers);
      warnings.push(...c.warnings);
      for (const [w, services] of at) resources.get(w)?.policies.push({ ...c.policy, services });
    } else if (o.kind === 'RequestAuthentication') {
      const at = attach(o);
      if (at.size === 0) continue;
      const c = convertRequestAuthentication(o);
      warnings.push(...c.warnings);
      for (const [w, services] of at) resources.get(w)?.requestAuthentications.push({ ...c.model, services });
    }
  }
  const virtualServices = allVirtualServices.filter((vs) => vs.gateways.length > 0);
  for (const vs of allVirtualServices) if (vs.gateways.length > 0 || vs.mesh) warnings.push(...vs.warnings);
  const istio = istioGatewayListeners(
    objects.filter((o): o is ResourceOf<'IstioGateway'> => o.kind === 'IstioGateway'),
    objects.filter((o): o is ResourceOf<'Pod'> => o.kind === 'Pod'),
    virtualServices,
    kubeServices,
  );
  warnings.push(...istio.warnings);
  const out = new Map<string, WaypointResourceModel>();
  for (const [key, r] of resources) {
    r.services.sort((a, b) =>
      `${a.namespace}/${a.hostname}:${a.port}`.localeCompare(`${b.namespace}/${b.hostname}:${b.port}`),
    );
    r.policies.sort((a, b) => a.name.localeCompare(b.name));
    r.requestAuthentications.sort((a, b) => a.name.localeCompare(b.name));
    const named = new Set(r.policies.filter((p) => p.action === 'CUSTOM').map((p) => p.provider));
    const gw = gateways.get(key);
    const proxy =
      gw === undefined
        ? key
        : `${gw.metadata.namespace}/${
            gatewayNames(gw, { nameSuffix: controllers.get(gw.spec.gatewayClassName) === GATEWAY_CONTROLLER })
              .deployment
          }`;
    out.set(proxy, {
      ...r,
      extAuthzProviders: [...named].sort().flatMap((n) => cfg.providers.get(n) ?? []),
      accessLog: cfg.accessLog,
      servicePolicies: servicePolicies.get(key) ?? [],
    });
  }
  // Proxies Istio Gateways select get those listeners too, after their own Gateway's.
  for (const [proxy, listeners] of istio.listeners) {
    const r = out.get(proxy);
    out.set(proxy, {
      services: r?.services ?? [],
      policies: r?.policies ?? [],
      requestAuthentications: r?.requestAuthentications ?? [],
      extAuthzProviders: r?.extAuthzProviders ?? [],
      listeners: [...(r?.listeners ?? []), ...listeners],
      accessLog: cfg.accessLog,
      servicePolicies: r?.servicePolicies ?? [],
    });
  }
  if (ingressViaWaypoint.size > 0)
    for (const [proxy, r] of out)
      if (r.listeners.length > 0)
        out.set(proxy, { ...r, listeners: r.listeners.map((l) => viaWaypoints(l, ingressViaWaypoint)) });
  for (const [proxy, r] of out)
    out.set(
      proxy,
      mapBackends(r, (b) => withTrafficPolicy(b, drs.trafficPolicy)),
    );
  return { resources: out, warnings };
}

/** The label by which a Service (or its namespace) asks ingress gateways to go through its waypoint. */
const INGRESS_USE_WAYPOINT = 'istio.io/ingress-use-waypoint';

/**
 * Whether ingress gateways reach a Service through its waypoint, as istio `pilot/pkg/serviceregistry/ambient/services.go`
 * reads `istio.io/ingress-use-waypoint`: the Service's label, else its namespace's; a value that is not one of Go's
 * booleans counts as false, and `invalid` hears it.
 */
export function ingressUseWaypoint(
  serviceLabels: Readonly<Record<string, string>>,
  namespaceLabels: Readonly<Record<string, string>> | undefined,
  invalid: (value: string) => void,
): boolean {
  const value = serviceLabels[INGRESS_USE_WAYPOINT] ?? namespaceLabels?.[INGRESS_USE_WAYPOINT];
  if (value === undefined) return false;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (!['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) invalid(value);
  return false;
}

/** A listener whose backends in `via` (`namespace/hostname`) are marked to be reached through their waypoint. */
function viaWaypoints(l: GatewayListenerModel, via: ReadonlySet<string>): GatewayListenerModel {
  return mapListenerBackends(l, (b) => (via.has(`${b.namespace}/${b.hostname}`) ? { ...b, useWaypoint: true } : b));
}

/** A route with `f` applied to each of its backends and mirror backends. */
function mapRouteBackends(x: RouteModel, f: (b: BackendModel) => BackendModel): RouteModel {
  return {
    ...x,
    action: 'forward' in x.action ? { forward: x.action.forward.map(f) } : x.action,
    ...(x.mirrors === undefined ? {} : { mirrors: x.mirrors.map((m) => ({ ...m, backend: f(m.backend) })) }),
  };
}

/** A listener with `f` applied to the backends of each of its routes. */
function mapListenerBackends(l: GatewayListenerModel, f: (b: BackendModel) => BackendModel): GatewayListenerModel {
  return {
    ...l,
    virtualHosts: l.virtualHosts.map((v) => ({ ...v, routes: v.routes.map((r) => mapRouteBackends(r, f)) })),
  };
}

/** Each backend and mirror backend of a resource's routes. */
function* backendsOf(r: WaypointResourceModel): Generator<BackendModel> {
  const routes = [
    ...r.services.flatMap((s) => s.routes),
    ...r.listeners.flatMap((l) => l.virtualHosts.flatMap((v) => v.routes)),
  ];
  for (const route of routes) {
    if ('forward' in route.action) yield* route.action.forward;
    for (const m of route.mirrors ?? []) yield m.backend;
  }
}

/** The backends of a resource that name a subset: the workloads they select make up their endpoints. */
export function subsetBackends(r: WaypointResourceModel): BackendModel[] {
  return [...backendsOf(r)].filter((b) => b.subset !== undefined);
}

/** A resource with `f` applied to every backend and mirror backend of its routes. */
function mapBackends(r: WaypointResourceModel, f: (b: BackendModel) => BackendModel): WaypointResourceModel {
  return {
    ...r,
    services: r.services.map((s) => ({ ...s, routes: s.routes.map((x) => mapRouteBackends(x, f)) })),
    listeners: r.listeners.map((l) => mapListenerBackends(l, f)),
  };
}

/** A resource with the endpoints of its subsets filled in from `workloads` (the same object when it has none). */
export function withSubsets(r: WaypointResourceModel, workloads: readonly SubsetCandidate[]): WaypointResourceModel {
  if (subsetBackends(r).length === 0) return r;
  return mapBackends(r, (b) => withSubsetEndpoints(b, workloads));
}
