import type { TrafficParties } from '../admin/metrics.js';
import type { RbacConnection } from '../rbac.js';

/**
 * One proxied connection as metrics, access logs and `/config_dump` report it, built once per connection by
 * `connectionInfo` (ztunnel `src/proxy/metrics.rs` `ConnectionResultBuilder` with its `ConnectionOpen`).
 */
export interface ConnectionInfo {
  readonly direction: 'inbound' | 'outbound';
  /** The proxy this connection belongs to, by its key in `workloadState`: the WDS uid (local mode) or pod UID (in-pod). */
  readonly workloadUid: string;
  readonly src: string;
  readonly originalDst: string;
  /** Where the bytes go: the peer's `ip:15008` for HBONE (ztunnel's `dst.addr`), else the app's `ip:port`. */
  readonly actualDst: string;
  /** The HBONE CONNECT target `ip:port` (ztunnel's `dst.hbone_addr`), for HBONE connections. */
  readonly hboneAddr: string | undefined;
  readonly protocol: 'HBONE' | 'TCP';
  readonly parties: TrafficParties;
  /** Inbound connections keep their RBAC attributes, to be re-checked when policies change (ztunnel `src/rbac.rs`). */
  readonly rbac: RbacConnection | undefined;
}

/** The addresses of a connection, as its access log names them (`src.addr`, `dst.addr`, `dst.hbone_addr`). */
export interface ConnectionAddrs {
  readonly src: string;
  /** Where the client sent the connection: the CONNECT authority inbound, the captured destination outbound. */
  readonly originalDst: string;
  readonly actualDst: string;
  readonly hboneAddr?: string | undefined;
}

/**
 * The record of a connection of the proxy `workloadUid`. The direction follows from who reports it, as ztunnel's
 * access log derives it (the destination's ztunnel, and a waypoint, report inbound); the protocol from the security
 * policy: HBONE
 * is always mutual TLS, plain TCP never is.
 */
export function connectionInfo(
  workloadUid: string,
  addrs: ConnectionAddrs,
  parties: TrafficParties,
  rbac?: RbacConnection,
): ConnectionInfo {
  return {
    direction: parties.reporter === 'source' ? 'outbound' : 'inbound',
    workloadUid,
    src: addrs.src,
    originalDst: addrs.originalDst,
    actualDst: addrs.actualDst,
    hboneAddr: addrs.hboneAddr,
    protocol: parties.mtls ? 'HBONE' : 'TCP',
    parties,
    rbac,
  };
}
