import type { ProxyState } from './proxy-state.js';
import type { Service } from './service.js';
import { workloadIdentity, type GatewayAddress, type Workload } from './workload.js';
import { identityToString } from '../../lib/spiffe.js';

/**
 * What a `GatewayAddress` names (ztunnel `src/state.rs` `fetch_destination`): by `network/ip`, the workload with that
 * address or else the service with that VIP as `namespace` sees it; by hostname, that namespace's service or
 * workload.
 */
export function gatewayDestination(
  state: ProxyState,
  gw: GatewayAddress,
  namespace: string,
): Service | Workload | undefined {
  const d = gw.destination;
  if ('hostname' in d) return state.byNamespacedHostname(d.namespace, d.hostname);
  const slash = d.address.indexOf('/');
  const network = d.address.slice(0, slash);
  const ip = d.address.slice(slash + 1);
  return state.workloadByAddr(network, ip) ?? state.serviceByVip(network, ip, namespace);
}

export function isService(a: Service | Workload): a is Service {
  return 'endpoints' in a;
}

/** The workloads that make up a waypoint: the workload itself, or every endpoint's workload of the service. */
function waypointWorkloads(state: ProxyState, a: Service | Workload): Workload[] {
  if (!isService(a)) return [a];
  const out: Workload[] = [];
  for (const ep of Object.values(a.endpoints)) {
    const w = state.workloadByUid(ep.workloadUid);
    if (w !== undefined) out.push(w);
  }
  return out;
}

/**
 * Whether a connection from `srcIdentity` at `srcIp` comes from the waypoint of `upstream` (ztunnel `src/proxy.rs`
 * `check_from_waypoint`): the waypoint's own traffic to the destination it stands in front of is not sent back to
 * the waypoint. Both the identity and the address must be one of the waypoint's workloads.
 */
export function isFromWaypoint(state: ProxyState, upstream: Workload, srcIdentity: string, srcIp: string): boolean {
  if (upstream.waypoint === undefined) return false;
  const wp = gatewayDestination(state, upstream.waypoint, upstream.namespace);
  if (wp === undefined) return false;
  return waypointWorkloads(state, wp).some(
    (w) => identityToString(workloadIdentity(w)) === srcIdentity && w.workloadIps.includes(srcIp),
  );
}

/**
 * Whether `local`, reached at `localIp`, is the waypoint of what `network/targetIp` names (ztunnel
 * `src/proxy/inbound.rs` `validate_destination`): a waypoint in front of a workload or service receives CONNECTs whose
 * target is that destination's address rather than its own.
 */
export function isWaypointFor(
  state: ProxyState,
  network: string,
  targetIp: string,
  local: Workload,
  localIp: string,
): boolean {
  const target = state.workloadByAddr(network, targetIp) ?? state.serviceByVip(network, targetIp, local.namespace);
  if (target?.waypoint === undefined) return false;
  const wp = gatewayDestination(state, target.waypoint, target.namespace);
  if (wp === undefined) return false;
  return isService(wp) ? wp.endpoints[local.uid] !== undefined : wp.workloadIps.includes(localIp);
}
