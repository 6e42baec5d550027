import net from 'node:net';
import { MeshError } from '../../lib/errors.js';
import { identityToString } from '../../lib/spiffe.js';
import type { ProxyState } from './proxy-state.js';
import type { Endpoint, LoadBalancerScope, Service } from './service.js';
import { workloadIdentity, type Workload } from './workload.js';

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
    };

/**
 * The outbound decision, ztunnel `src/proxy/outbound.rs`: workload IP first, then service VIP; a service is
 * load-balanced over healthy endpoints that have the port; unknown destinations pass through; a known
 * service with no usable endpoint fails.
 */
export function resolveUpstream(
  state: ProxyState,
  source: Workload,
  dstIp: string,
  dstPort: number,
  random: () => number = Math.random,
): Upstream {
  const w = state.workloadByAddr(source.network, dstIp);
  if (w !== undefined) return toWorkload(w, undefined, dstPort, dstIp);
  const svc = state.serviceByVip(source.network, dstIp, source.namespace);
  if (svc === undefined) return { kind: 'passthrough', ip: dstIp, port: dstPort, service: undefined };
  if (svc.loadBalancer?.mode === 'Passthrough') return { kind: 'passthrough', ip: dstIp, port: dstPort, service: svc };
  const svcTarget = svc.ports[String(dstPort)];
  if (svcTarget === undefined) {
    throw new MeshError(
      'ZT_ERR_SERVICE_PORT',
      `service ${svc.namespace}/${svc.hostname} has no port ${dstPort} (ports: ${Object.keys(svc.ports).join(', ') || 'none'})`,
    );
  }
  const allowUnhealthy = svc.loadBalancer?.healthPolicy === 'AllowAll';
  const candidates: { w: Workload; ep: Endpoint; port: number }[] = [];
  for (const ep of Object.values(svc.endpoints)) {
    const ew = state.workloadByUid(ep.workloadUid);
    if (ew === undefined || (ew.workloadIps.length === 0 && ew.hostname === '')) continue;
    if (!allowUnhealthy && (ep.status !== 'Healthy' || ew.status !== 'Healthy')) continue;
    const port = ep.port[String(dstPort)] ?? svcTarget;
    if (port === 0) continue; // a named port this endpoint does not define
    candidates.push({ w: ew, ep, port });
  }
  const ranked = rankByLocality(svc, source, candidates);
  const pick = weightedPick(ranked, random);
  if (pick === undefined) {
    throw new MeshError(
      'ZT_ERR_NO_HEALTHY_UPSTREAM',
      `no healthy upstream for ${svc.namespace}/${svc.hostname}:${dstPort} (${Object.keys(svc.endpoints).length} endpoint(s), none usable)`,
    );
  }
  return toWorkload(pick.w, svc, pick.port, dstIp);
}

function toWorkload(w: Workload, svc: Service | undefined, port: number, originalIp: string): Upstream {
  // A workload known only by DNS name gets ip '' here; the caller resolves `workload.hostname` (ztunnel `src/proxy/outbound.rs`).
  const ip = chooseIp(w, svc, originalIp) ?? (w.hostname !== '' ? '' : undefined);
  if (ip === undefined)
    throw new MeshError('ZT_ERR_NO_HEALTHY_UPSTREAM', `workload ${w.uid} has neither an IP address nor a hostname`);
  const ids = new Set<string>(svc?.subjectAltNames ?? []);
  ids.add(identityToString(workloadIdentity(w)));
  return {
    kind: 'workload',
    protocol: w.protocol,
    workload: w,
    service: svc,
    ip,
    targetPort: port,
    expectedIdentities: [...ids],
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
