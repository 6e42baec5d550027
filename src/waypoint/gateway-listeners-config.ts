/**
 * An ingress gateway's listeners as istiod sends them (`amesh.waypoint.v1.Listener`, docs/waypoint-xds.md),
 * converted once per push, and the two choices made per connection and per request, as Envoy makes them for the
 * listeners Istio generates:
 * - a TLS connection's listener by its SNI: the listener whose hostname is that name, else the one whose
 *   `*.suffix` is longest among those that cover it, else one without a hostname (`listenerForSni`);
 * - a request's virtual host by its Host: exact, else the longest `*.suffix` that covers it, else `*`
 *   (`virtualHostFor`). No virtual host: 404.
 */
import type { Listener } from '../api/amesh/waypoint/v1/waypoint_pb.js';
import { brokenTable, routesFromXds, type RouteTable } from './route-table.js';

/** What a listener serves: HTTP, HTTPS terminated here, TLS by SNI (passed through or terminated), or TCP. */
export type GatewayProtocol = 'HTTP' | 'HTTPS' | 'TLS' | 'TCP';
const PROTOCOLS: ReadonlySet<string> = new Set<GatewayProtocol>(['HTTP', 'HTTPS', 'TLS', 'TCP']);

export interface GatewayListenerConfig {
  readonly name: string;
  readonly port: number;
  readonly protocol: GatewayProtocol;
  /** Empty: any. */
  readonly hostname: string;
  readonly credentialNames: readonly string[];
  /** Client certificates: the SDS names of the CAs they must chain to (none: not asked for); whether optional. */
  readonly clientCaNames: readonly string[];
  readonly clientCertificateOptional: boolean;
  /** A TLS listener: its TLS is terminated here (else passed through). */
  readonly terminate: boolean;
  /** Client certificates must carry one of these SANs (none: any), and match one of these pins (none: any). */
  readonly clientSubjectAltNames: readonly string[];
  readonly clientCertificateHashes: readonly string[];
  readonly clientCertificateSpkis: readonly string[];
  /** By hostname (exact, `*.suffix`, or `*`). */
  readonly virtualHosts: ReadonlyMap<string, RouteTable>;
}

/** Converts istiod's listeners; one with an unknown protocol is left out, and the reason returned. */
export function gatewayListenersFromXds(listeners: readonly Listener[]): {
  listeners: GatewayListenerConfig[];
  rejected: string[];
} {
  const out: GatewayListenerConfig[] = [];
  const rejected: string[] = [];
  for (const l of listeners) {
    if (!PROTOCOLS.has(l.protocol)) {
      rejected.push(`listener ${l.name}: protocol ${l.protocol} is not served`);
      continue;
    }
    const hosts = new Map<string, RouteTable>();
    for (const v of l.virtualHosts) {
      try {
        hosts.set(
          v.hostname,
          Object.freeze({ namespace: '', hostname: v.hostname, port: l.port, routes: routesFromXds(v.routes) }),
        );
      } catch (e) {
        rejected.push(`listener ${l.name} host ${v.hostname}: ${(e as Error).message}`);
        hosts.set(v.hostname, brokenTable('', v.hostname, l.port));
      }
    }
    out.push(
      Object.freeze({
        name: l.name,
        port: l.port,
        protocol: l.protocol as GatewayProtocol,
        hostname: l.hostname,
        credentialNames: [...l.credentialNames],
        clientCaNames: [...l.clientCaNames],
        clientCertificateOptional: l.clientCertificateOptional,
        terminate: l.terminate,
        clientSubjectAltNames: [...l.clientSubjectAltNames],
        // Fingerprints compared as hex digits without colons, in lower case.
        clientCertificateHashes: l.clientCertificateHashes.map((h) => h.replaceAll(':', '').toLowerCase()),
        clientCertificateSpkis: [...l.clientCertificateSpkis],
        virtualHosts: hosts,
      }),
    );
  }
  return { listeners: out, rejected };
}

/** How well `pattern` (exact, `*.suffix`, `*` or empty) covers `name`: -1 not at all, higher is more specific. */
function cover(pattern: string, name: string): number {
  if (pattern === '' || pattern === '*') return 0;
  if (pattern === name) return Number.MAX_SAFE_INTEGER;
  if (pattern.startsWith('*.') && name.endsWith(pattern.slice(1)) && name.length > pattern.length - 1)
    return pattern.length;
  return -1;
}

function best<T>(items: Iterable<T>, pattern: (t: T) => string, name: string): T | undefined {
  let pick: T | undefined;
  let score = -1;
  for (const t of items) {
    const s = cover(pattern(t), name.toLowerCase());
    if (s > score) {
      pick = t;
      score = s;
    }
  }
  return pick;
}

/** The listener of a port that takes a TLS connection with this SNI (none given: one without a hostname). */
export function listenerForSni(
  listeners: readonly GatewayListenerConfig[],
  sni: string | undefined,
): GatewayListenerConfig | undefined {
  if (sni === undefined || sni === '') return listeners.find((l) => l.hostname === '');
  return best(listeners, (l) => l.hostname, sni);
}

/** The route table of the virtual host a request's Host (port left off) selects among `listeners`. */
export function virtualHostFor(listeners: readonly GatewayListenerConfig[], host: string): RouteTable | undefined {
  const name = host.replace(/:[0-9]+$/, '').replace(/\.$/, '');
  const tables = listeners.flatMap((l) => [...l.virtualHosts.values()]);
  return best(tables, (t) => t.hostname, name);
}
