import { serviceKey, type Service } from '../state/service.js';
import type { Workload } from '../state/workload.js';

/** Where the services a workload backs are looked up (ProxyState). */
export interface ServiceLookup {
  serviceByKey(key: string): Service | undefined;
  serviceByHostname(hostname: string, preferNs: string): Service | undefined;
}

/**
 * The service an inbound connection to `dest` on `port` was most likely addressed to, for telemetry only
 * (ztunnel `src/proxy.rs` `guess_inbound_service`): a connection captured on the destination carries no VIP,
 * so the guess is among the services the workload backs. The one the client named (`forHost`, an HBONE
 * `Forwarded: host=`) wins when the workload backs it; a client cannot name just any service. Otherwise one with a
 * port whose target is `port` — directly, or through this workload's endpoint for a named target port.
 *
 * ztunnel takes the first match in a hash map's order. Istio's rule when several Services select one workload
 * port is that the oldest wins (istio `pilot/pkg/networking/core/listener_inbound.go`), but ztunnel is sent no
 * creation times; so the winner is picked the way ztunnel `get_best_by_vip` picks among a VIP's services: one
 * in the workload's own namespace first, then a canonical one, then the lowest `namespace/hostname`, so the
 * same state always names the same service.
 */
export function guessInboundService(
  state: ServiceLookup,
  dest: Workload,
  port: number,
  forHost?: string,
): Service | undefined {
  const named = forHost === undefined ? undefined : state.serviceByHostname(forHost, dest.namespace);
  if (named !== undefined && dest.services.includes(serviceKey(named))) return named;
  let best: Service | undefined;
  for (const key of dest.services) {
    const svc = state.serviceByKey(key);
    if (svc === undefined || !servesPort(svc, dest.uid, port)) continue;
    if (best === undefined || preferred(svc, best, dest.namespace)) best = svc;
  }
  return best;
}

function servesPort(svc: Service, uid: string, port: number): boolean {
  const endpointPorts = svc.endpoints[uid]?.port;
  for (const [servicePort, targetPort] of Object.entries(svc.ports)) {
    if (targetPort === port || endpointPorts?.[servicePort] === port) return true;
  }
  return false;
}

/** `a` wins over `b` for a workload in namespace `ns`. */
function preferred(a: Service, b: Service, ns: string): boolean {
  if ((a.namespace === ns) !== (b.namespace === ns)) return a.namespace === ns;
  if (a.canonical !== b.canonical) return a.canonical;
  return serviceKey(a) < serviceKey(b);
}
