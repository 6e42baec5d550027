import net from 'node:net';
import { MeshError } from '../../lib/errors.js';
import { formatHostPort } from '../../lib/ip.js';
import { identityToString } from '../../lib/spiffe.js';
import type { ProxyState } from './proxy-state.js';
import type { Endpoint, LoadBalancerScope, Service } from './service.js';
import { gatewayDestination, isFromWaypoint, isService } from './waypoint.js';
import { workloadIdentity, type GatewayAddress, type Workload } from './workload.js';

/** Where an outbound connection goes (ztunnel `src/proxy/outbound.rs`). */
export type Upstream =
  | { readonly kind: 'passthrough'; readonly ip: string; readonly port: number; readonly service: Service | undefined }
  | {
      readonly kind: 'workload';
      readonly protocol: 'HBONE' | 'TCP';
      readonly workload: Workload;
      readonly service: Service | undefined;
      /** '' when the workload has only a hostname, to be resolved by DNS. */
      readonly ip: string;
      readonly targetPort: number;
      /** SANs the server must present: service SANs ∪ the workload's identity (ztunnel `src/tls/workload.rs`). */
      readonly expectedIdentities: readonly string[];
    }
  | {
      /** Through the destination's waypoint: HBONE to the waypoint, the original destination as CONNECT target. */
      readonly kind: 'waypoint';
      /** The waypoint's workload that was picked. */
      readonly workload: Workload;
      /** The service the app addressed, if it addressed one (not the waypoint's own service). */
      readonly service: Service | undefined;
      /** The waypoint's address ('' when it has only a hostname) and its HBONE port. */
      readonly ip: string;
      readonly port: number;
      /** The CONNECT `:authority`: the address the app dialled. */
      readonly target: string;
      /** The waypoint workload's identity ∪ its service's SANs. */
      readonly expectedIdentities: readonly string[];
    };

/** What picking a backend of a service checks of the port (ztunnel's `ServiceResolutionMode`). */
type ResolutionMode = 'standard' | 'waypoint';

/**
 * The outbound decision, ztunnel `src/proxy/outbound.rs` `build_request`: a service VIP whose service has a waypoint
 * goes to that waypoint; else workload IP first, then service VIP; a service is load-balanced over healthy endpoints
 * that have the port; a workload with a waypoint, addressed directly and not by its own waypoint, goes to that
 * waypoint; unknown destinations pass through; a known service with no usable endpoint fails. A waypoint that cannot
 * be found fails the connection: traffic bound to a waypoint never goes around it. `downstreamIp` is the address the
 * app connected from.
 */
export function resolveUpstream(
  state: ProxyState,
  source: Workload,
  dstIp: string,
  dstPort: number,
  downstreamIp: string,
  random: () => number = Math.random,
): Upstream {
  const target = formatHostPort(dstIp, dstPort);
  const w = state.workloadByAddr(source.network, dstIp);
  if (w !== undefined) {
    if (w.waypoint !== undefined && !isFromWaypoint(state, w, identityToString(workloadIdentity(source)), downstreamIp))
      return viaWaypoint(state, w.waypoint, source, dstIp, target, undefined, random);
    return toWorkload(w, undefined, dstPort, dstIp);
  }
  const svc = state.serviceByVip(source.network, dstIp, source.namespace);
  if (svc === undefined) return { kind: 'passthrough', ip: dstIp, port: dstPort, service: undefined };
  if (svc.waypoint !== undefined) return viaWaypoint(state, svc.waypoint, source, dstIp, target, svc, random);
  if (svc.loadBalancer?.mode === 'Passthrough') return { kind: 'passthrough', ip: dstIp, port: dstPort, service: svc };
  if (svc.ports[String(dstPort)] === undefined) {
    throw new MeshError(
      'ZT_ERR_SERVICE_PORT',
      `service ${svc.namespace}/${svc.hostname} has no port ${dstPort} (ports: ${Object.keys(svc.ports).join(', ') || 'none'})`,
    );
  }
  const pick = pickEndpoint(state, svc, source, dstPort, 'standard', random);
  if (pick === undefined) {
    throw new MeshError(
      'ZT_ERR_NO_HEALTHY_UPSTREAM',
      `no healthy upstream for ${svc.namespace}/${svc.hostname}:${dstPort} (${Object.keys(svc.endpoints).length} endpoint(s), none usable)`,
    );
  }
  return toWorkload(pick.w, svc, pick.port, dstIp);
}

/**
 * Where a waypoint sends a connection it accepted for `dstIp:dstPort`, the address the client dialled: a service VIP
 * to one of the service's healthy endpoints at its target port (load-balanced as for any client), a workload's
 * address as it is. The waypoint then connects to that workload; as the workload's own waypoint it is not sent back
 * to itself (`isFromWaypoint`). An address the mesh does not know is refused: a waypoint is no open proxy.
 */
export function resolveBehindWaypoint(
  state: ProxyState,
  self: Workload,
  dstIp: string,
  dstPort: number,
  random: () => number = Math.random,
): { readonly ip: string; readonly port: number; readonly service: Service | undefined } {
  if (state.workloadByAddr(self.network, dstIp) !== undefined) return { ip: dstIp, port: dstPort, service: undefined };
  const svc = state.serviceByVip(self.network, dstIp, self.namespace);
  if (svc === undefined)
    throw new MeshError(
      'ZT_ERR_NO_HEALTHY_UPSTREAM',
      `${formatHostPort(dstIp, dstPort)} is not a service or workload of the mesh`,
    );
  return resolveServiceBehindWaypoint(state, self, svc, dstPort, dstIp, undefined, random);
}

/**
 * A healthy endpoint of `svc` for its port `dstPort`, chosen for a request a waypoint forwards (a Service's own, or
 * one its HTTP route named). `dialled`: the address the client dialled, which picks the endpoint's IP family.
 */
export function resolveServiceBehindWaypoint(
  state: ProxyState,
  self: Workload,
  svc: Service,
  dstPort: number,
  dialled: string,
  /** A subset's workloads (by UID): only these endpoints are picked. */
  only?: ReadonlySet<string>,
  random: () => number = Math.random,
  chooser?: EndpointChooser,
): { readonly ip: string; readonly port: number; readonly service: Service } {
  const pick =
    svc.ports[String(dstPort)] === undefined
      ? undefined
      : pickEndpoint(state, svc, self, dstPort, 'standard', random, only, chooser);
  const ip = pick === undefined ? undefined : chooseIp(pick.w, svc, dialled);
  if (pick === undefined || ip === undefined)
    throw new MeshError(
      'ZT_ERR_NO_HEALTHY_UPSTREAM',
      `no healthy upstream for ${svc.namespace}/${svc.hostname}:${dstPort} behind its waypoint`,
    );
  return { ip, port: pick.port, service: svc };
}

/**
 * A healthy endpoint of `svc` for `port`, ranked by locality and weighted by capacity, with the port it is reached on
 * (ztunnel `load_balance` and `find_upstream_from_service`). For a waypoint the port need not be the service's when
 * the workload has an application tunnel.
 */
function pickEndpoint(
  state: ProxyState,
  svc: Service,
  source: Workload,
  port: number,
  mode: ResolutionMode,
  random: () => number,
  only?: ReadonlySet<string>,
  chooser?: EndpointChooser,
): { w: Workload; port: number } | undefined {
  const svcTarget = svc.ports[String(port)];
  const allowUnhealthy = svc.loadBalancer?.healthPolicy === 'AllowAll';
  const candidates: { w: Workload; ep: Endpoint; port: number }[] = [];
  for (const ep of Object.values(svc.endpoints)) {
    if (only !== undefined && !only.has(ep.workloadUid)) continue;
    const ew = state.workloadByUid(ep.workloadUid);
    if (ew === undefined || (ew.workloadIps.length === 0 && ew.hostname === '')) continue;
    if (!allowUnhealthy && (ep.status !== 'Healthy' || ew.status !== 'Healthy')) continue;
    const mapped = ep.port[String(port)] ?? (svcTarget !== undefined && svcTarget > 0 ? svcTarget : undefined);
    const tunnel = mode === 'waypoint' && ew.applicationTunnel?.port !== undefined;
    const p = mapped ?? (tunnel ? port : 0);
    if (p === 0) continue; // a port this endpoint does not define
    candidates.push({ w: ew, ep, port: p });
  }
  if (chooser === undefined) return weightedPick(rankByLocality(svc, source, candidates), random);
  return chooser.choose(rankByLocality(svc, source, [...chooser.usable(candidates)]));
}

/**
 * How a waypoint picks among a Service's healthy endpoints instead of ztunnel's weighted random pick (a
 * DestinationRule's traffic policy): those it may use (not ejected), ranked by locality, then one of the best.
 */
export interface EndpointChooser {
  usable<T extends { readonly w: Workload }>(candidates: readonly T[]): readonly T[];
  choose<T extends { readonly w: Workload }>(candidates: readonly T[]): T | undefined;
}

/**
 * The waypoint `gw` names, resolved to one of its workloads (ztunnel `src/state.rs` `fetch_waypoint`). Named by
 * address, the waypoint's own address picks the IP family; by hostname, the address the app dialled does.
 */
function viaWaypoint(
  state: ProxyState,
  gw: GatewayAddress,
  source: Workload,
  dstIp: string,
  target: string,
  service: Service | undefined,
  random: () => number,
): Upstream {
  const what =
    'hostname' in gw.destination ? `${gw.destination.namespace}/${gw.destination.hostname}` : gw.destination.address;
  const dest = gatewayDestination(state, gw, source.namespace);
  if (dest === undefined) throw new MeshError('ZT_ERR_UNKNOWN_WAYPOINT', `waypoint ${what} not found`);
  const familyOf =
    'address' in gw.destination ? gw.destination.address.slice(gw.destination.address.indexOf('/') + 1) : dstIp;
  let picked: { w: Workload; port: number; svc: Service | undefined };
  if (isService(dest)) {
    const p = pickEndpoint(state, dest, source, gw.hboneMtlsPort, 'waypoint', random);
    if (p === undefined)
      throw new MeshError(
        'ZT_ERR_UNKNOWN_WAYPOINT',
        `waypoint ${what} has no healthy endpoint with port ${gw.hboneMtlsPort} (${Object.keys(dest.endpoints).length} endpoint(s))`,
      );
    picked = { ...p, svc: dest };
  } else picked = { w: dest, port: gw.hboneMtlsPort, svc: undefined };
  const ip = chooseIp(picked.w, picked.svc, familyOf) ?? (picked.w.hostname !== '' ? '' : undefined);
  if (ip === undefined)
    throw new MeshError(
      'ZT_ERR_UNKNOWN_WAYPOINT',
      `waypoint workload ${picked.w.uid} has neither an IP address nor a hostname`,
    );
  return {
    kind: 'waypoint',
    workload: picked.w,
    service,
    ip,
    port: picked.port,
    target,
    expectedIdentities: identities(picked.w, picked.svc),
  };
}

/** SANs a server must present: its service's SANs ∪ the workload's identity (ztunnel `workload_and_services_san`). */
function identities(w: Workload, svc: Service | undefined): string[] {
  const ids = new Set<string>(svc?.subjectAltNames ?? []);
  ids.add(identityToString(workloadIdentity(w)));
  return [...ids];
}

function toWorkload(w: Workload, svc: Service | undefined, port: number, originalIp: string): Upstream {
  // A workload known only by DNS name gets ip '' here; the caller resolves `workload.hostname` (ztunnel `src/proxy/outbound.rs`).
  const ip = chooseIp(w, svc, originalIp) ?? (w.hostname !== '' ? '' : undefined);
  if (ip === undefined)
    throw new MeshError('ZT_ERR_NO_HEALTHY_UPSTREAM', `workload ${w.uid} has neither an IP address nor a hostname`);
  return {
    kind: 'workload',
    protocol: w.protocol,
    workload: w,
    service: svc,
    ip,
    targetPort: port,
    expectedIdentities: identities(w, svc),
  };
}

/** Step 7: the original IP if the workload has it; else one of the service's family, else the original's family, else any. */
function chooseIp(w: Workload, svc: Service | undefined, original: string): string | undefined {
  if (w.workloadIps.includes(original)) return original;
  const fam = svc?.ipFamilies;
  if (fam === 'IPv4' || fam === 'IPv6') {
    const want = fam === 'IPv4' ? 4 : 6;
    const m = w.workloadIps.find((ip) => net.isIP(ip) === want);
    if (m !== undefined) return m;
  }
  return w.workloadIps.find((ip) => net.isIP(ip) === net.isIP(original)) ?? w.workloadIps[0];
}

function scopeMatches(scope: LoadBalancerScope, a: Workload, b: Workload): boolean {
  switch (scope) {
    case 'Region':
      return (a.locality?.region ?? '') === (b.locality?.region ?? '');
    case 'Zone':
      return (a.locality?.zone ?? '') === (b.locality?.zone ?? '');
    case 'Subzone':
      return (a.locality?.subzone ?? '') === (b.locality?.subzone ?? '');
    case 'Node':
      return a.node === b.node;
    case 'Cluster':
      return a.clusterId === b.clusterId;
    case 'Network':
      return a.network === b.network;
  }
}

/** STRICT/FAILOVER: rank by how many routing preferences match in order; keep the best (STRICT: only full matches). */
function rankByLocality<T extends { w: Workload }>(svc: Service, source: Workload, cands: T[]): T[] {
  const lb = svc.loadBalancer;
  if (lb === undefined || (lb.mode !== 'Strict' && lb.mode !== 'Failover') || lb.routingPreferences.length === 0)
    return cands;
  const rank = (c: T): number => {
    let n = 0;
    for (const s of lb.routingPreferences) {
      if (!scopeMatches(s, source, c.w)) break;
      n++;
    }
    return n;
  };
  const ranked = cands.map((c) => ({ c, r: rank(c) }));
  const full = lb.routingPreferences.length;
  const pool = lb.mode === 'Strict' ? ranked.filter((x) => x.r === full) : ranked;
  const best = Math.max(-1, ...pool.map((x) => x.r));
  return pool.filter((x) => x.r === best).map((x) => x.c);
}

/** Random pick weighted by `capacity` (default 1). */
function weightedPick<T extends { w: Workload }>(cands: T[], random: () => number): T | undefined {
  const total = cands.reduce((s, c) => s + c.w.capacity, 0);
  if (total <= 0) return cands[Math.floor(random() * cands.length)];
  let r = random() * total;
  for (const c of cands) {
    r -= c.w.capacity;
    if (r < 0) return c;
  }
  return cands[cands.length - 1];
}
