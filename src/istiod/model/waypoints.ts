import type { JsonObject } from '../../apiserver/validation/json-fields.js';
import { selectorMatches } from '../../apiserver/validation/label-selector.js';
import { ipBytes } from '../../lib/ip.js';
import { HBONE_PORT } from '../../lib/istio-ports.js';
import type { ResourceOf } from '../registry/manifest-dir.js';
import type { GatewayAddressModel } from './types.js';

/** Istio's waypoint labels (istio.io/api `label`) and the values it gives them (istio `pkg/config/constants`). */
export const USE_WAYPOINT_LABEL = 'istio.io/use-waypoint';
export const USE_WAYPOINT_NAMESPACE_LABEL = 'istio.io/use-waypoint-namespace';
export const WAYPOINT_FOR_LABEL = 'istio.io/waypoint-for';
export const GATEWAY_MANAGED_LABEL = 'gateway.istio.io/managed';
export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name';
export const MESH_CONTROLLER_MANAGED = 'istio.io-mesh-controller';
/** The waypoint GatewayClass (constants.WaypointGatewayClassName) and the `istio.io/rev` label. */
export const WAYPOINT_CLASS = 'istio-waypoint';
export const REVISION_LABEL = 'istio.io/rev';
const EAST_WEST_CONTROLLER_MANAGED = 'istio.io-eastwest-controller';

/** A Gateway that can stand in front of workloads and services (istio `pilot/pkg/serviceregistry/ambient/waypoints.go` `Waypoint`). */
export interface WaypointModel {
  readonly namespace: string;
  readonly name: string;
  readonly address: GatewayAddressModel;
  /** What traffic it takes (`istio.io/waypoint-for`: service, workload, all, none); `service` when nothing says. */
  readonly traffic: string;
  /** Which namespaces may bind to it: its HBONE listener's `allowedRoutes.namespaces`. */
  readonly allowed: AllowedNamespaces;
}

interface AllowedNamespaces {
  readonly from: 'All' | 'Same' | 'Selector' | 'None';
  readonly selector: JsonObject;
}

/** What binding reads: the waypoints by `namespace/name` and each namespace's labels. */
export interface WaypointInputs {
  readonly waypoints: ReadonlyMap<string, WaypointModel>;
  readonly namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>>;
}

interface Meta {
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
}

/**
 * The address a Gateway is reached at as a waypoint (istio `getGatewayAddress`): its published hostname (the
 * waypoint Service's), else its published IP, at the HBONE port. None until its controller published one, which it
 * does once the waypoint has a ready pod.
 */
function gatewayAddress(gw: ResourceOf<'Gateway'>): GatewayAddressModel | undefined {
  const addrs = (gw.status.addresses ?? []).flatMap((a) => (a === null ? [] : [a]));
  const host = addrs.find((a) => a.type === 'Hostname' && typeof a.value === 'string');
  if (host?.value != null)
    return { hostname: { namespace: gw.metadata.namespace, hostname: host.value }, hboneMtlsPort: HBONE_PORT };
  for (const a of addrs) {
    if (a.type !== 'IPAddress' || a.value == null) continue;
    const b = ipBytes(a.value);
    if (b !== undefined) return { address: { network: '', address: new Uint8Array(b) }, hboneMtlsPort: HBONE_PORT };
  }
  return undefined;
}

/** The namespaces a waypoint admits, from its HBONE listener on 15008 (istio `makeAllowedRoutes`); else its own. */
function allowedNamespaces(gw: ResourceOf<'Gateway'>): AllowedNamespaces {
  const hbone = (gw.spec.listeners ?? []).find((l) => l?.protocol === 'HBONE' && l.port === HBONE_PORT);
  const ns = hbone?.allowedRoutes?.namespaces;
  return { from: ns?.from ?? 'Same', selector: ns?.selector ?? {} };
}

/** Every Gateway that has published an address, as a waypoint, keyed by `namespace/name` (istio `gatewayToWaypointTransform`). */
export function waypointsOf(
  gateways: readonly ResourceOf<'Gateway'>[],
  classes: readonly ResourceOf<'GatewayClass'>[],
): Map<string, WaypointModel> {
  const classTraffic = new Map(
    classes.flatMap((c) => {
      const t = c.metadata.labels[WAYPOINT_FOR_LABEL];
      return t === undefined ? [] : [[c.metadata.name, t] as const];
    }),
  );
  const out = new Map<string, WaypointModel>();
  for (const gw of gateways) {
    const address = gatewayAddress(gw);
    if (address === undefined) continue;
    out.set(`${gw.metadata.namespace}/${gw.metadata.name}`, {
      namespace: gw.metadata.namespace,
      name: gw.metadata.name,
      address,
      traffic: gw.metadata.labels[WAYPOINT_FOR_LABEL] ?? classTraffic.get(gw.spec.gatewayClassName) ?? 'service',
      allowed: allowedNamespaces(gw),
    });
  }
  return out;
}

/** Whether a waypoint admits objects of `namespace` (istio `AllowsAttachmentFromNamespace`). */
function admits(w: WaypointModel, namespace: string, labels: Readonly<Record<string, string>>): boolean {
  switch (w.allowed.from) {
    case 'All':
      return true;
    case 'Selector':
      return selectorMatches(w.allowed.selector, labels);
    case 'Same':
      return w.namespace === namespace;
    case 'None':
      return false;
  }
}

/** The `istio.io/use-waypoint` reference on `labels`: 'none' opts out; undefined when there is none. */
function useWaypoint(labels: Readonly<Record<string, string>>, fallbackNamespace: string): string | undefined {
  const name = labels[USE_WAYPOINT_LABEL];
  if (name === undefined) return undefined;
  if (name === 'none') return 'none';
  return `${labels[USE_WAYPOINT_NAMESPACE_LABEL] ?? fallbackNamespace}/${name}`;
}

/**
 * The waypoint an object is bound to (istio `fetchWaypointForTarget`): its own `istio.io/use-waypoint` label, else
 * its namespace's; `none` on the object opts out. A waypoint that is not (yet) known, or does not admit the object's
 * namespace, binds nothing.
 */
function waypointFor(inputs: WaypointInputs, o: Meta): WaypointModel | undefined {
  const nsLabels = inputs.namespaceLabels.get(o.namespace) ?? {};
  const own = useWaypoint(o.labels, o.namespace);
  if (own === 'none') return undefined;
  const ref = own ?? useWaypoint(nsLabels, o.namespace);
  if (ref === undefined || ref === 'none') return undefined;
  const w = inputs.waypoints.get(ref);
  return w !== undefined && admits(w, o.namespace, nsLabels) ? w : undefined;
}

/**
 * The waypoint of a Service or ServiceEntry (istio `fetchWaypointForService`): one that takes service traffic. A
 * waypoint's or east-west gateway's own Service never has one.
 */
export function serviceWaypoint(inputs: WaypointInputs, o: Meta): GatewayAddressModel | undefined {
  const managed = o.labels[GATEWAY_MANAGED_LABEL];
  if (managed === MESH_CONTROLLER_MANAGED || managed === EAST_WEST_CONTROLLER_MANAGED) return undefined;
  const w = waypointFor(inputs, o);
  return w !== undefined && (w.traffic === 'service' || w.traffic === 'all') ? w.address : undefined;
}

/**
 * The waypoint of a pod or WorkloadEntry (istio `computeWaypoint`, `fetchWaypointForWorkload`): one that takes
 * workload traffic. A waypoint's own pod (its `gateway.networking.k8s.io/gateway-name` names a known waypoint) never
 * has one.
 */
export function workloadWaypoint(inputs: WaypointInputs, o: Meta): GatewayAddressModel | undefined {
  const instanceOf = o.labels[GATEWAY_NAME_LABEL];
  if (instanceOf !== undefined && inputs.waypoints.has(`${o.namespace}/${instanceOf}`)) return undefined;
  const w = waypointFor(inputs, o);
  return w !== undefined && (w.traffic === 'workload' || w.traffic === 'all') ? w.address : undefined;
}
