import net from 'node:net';
import { MeshError } from '../../lib/errors.js';
import { formatHostPort, parseHostPort } from '../../lib/ip.js';
import type { Identity } from '../../lib/spiffe.js';
import { ILLEGAL_PORTS, type ZtunnelConfig } from '../config.js';
import { HBONE_PORT } from '../../lib/istio-ports.js';
import { evaluate, type RbacConnection, type RbacDecision } from '../rbac.js';
import type { ProxyState } from '../state/proxy-state.js';
import type { Service } from '../state/service.js';
import { isWaypointFor } from '../state/waypoint.js';
import type { Workload } from '../state/workload.js';
import type { Authorization } from '../state/policy.js';
import type { ResponseFlags } from '../admin/metrics.js';
import { NO_BAGGAGE, parseBaggage } from './baggage.js';
import { connectionInfo, type ConnectionInfo } from './connection-info.js';
import { guessInboundService } from './guess-inbound-service.js';
import type { LocalWorkloadInformation } from './local-workload.js';

/** What the inbound path reads of a CONNECT request head (ztunnel `src/proxy/h2/server.rs` `RequestParts`). */
export interface RequestParts {
  readonly method: string;
  readonly authority: string | undefined;
  /** The regular header fields, lower-case names, in wire order. */
  readonly fields: readonly (readonly [name: string, value: string])[];
}

/** An authenticated HBONE client connection (ztunnel's `rbac::Connection` as the TLS handshake leaves it). */
export interface InboundPeer {
  readonly identity: Identity;
  /** The client's `ip:port`, as logs name it. */
  readonly addr: string;
  readonly ip: string;
  /** The address the connection arrived on (ztunnel's `dst`): the workload IP it was made to. */
  readonly localIp: string;
}

/** A CONNECT to serve (ztunnel `src/proxy/inbound.rs` `InboundRequest`), policy included. */
export interface InboundRequest {
  readonly ok: true;
  /** The app: the IP the connection arrived on, at the port the CONNECT reaches once service ports are mapped. */
  readonly upstream: { readonly ip: string; readonly port: number };
  /** The local workload the connection is for; its baggage answers the CONNECT. */
  readonly destination: Workload;
  /** The connection as it is reported; `rbac` is what policy allowed, re-checked whenever policies change. */
  readonly info: ConnectionInfo;
  readonly policy: RbacDecision;
}

/** A CONNECT to refuse with an HTTP status (ztunnel's `InboundError` / `InboundFlagError`). */
export interface InboundRefusal {
  readonly ok: false;
  readonly status: 400 | 401 | 503;
  readonly flags: ResponseFlags;
  readonly error: MeshError;
  /** Refused once the connection was built (by policy): reported as opened, then closed and failed. */
  readonly built: boolean;
  /** Attributed to the local workload and, once it is known, the service the CONNECT was for. */
  readonly info: ConnectionInfo;
  /** The decision that refused it, when policy did. */
  readonly policy: RbacDecision | undefined;
}

/**
 * Decides one HBONE CONNECT from its head, the authenticated peer and the state (ztunnel `src/proxy/inbound.rs`
 * `build_inbound_request`, then the policy check of `serve_connect`): a malformed request is answered 400, a target
 * this workload does not serve 503, a policy denial 401 (the workload's policies, unless `policiesFor` says which). A
 * source the state does not know by its IP is reported by what the CONNECT's `baggage` says of it. Reads the state
 * and nothing else: no socket, no log.
 */
export function buildInboundRequest(
  head: RequestParts,
  peer: InboundPeer,
  local: Pick<LocalWorkloadInformation, 'key' | 'current'>,
  state: ProxyState,
  config: Pick<ZtunnelConfig, 'network' | 'enableResponseBaggage'>,
  policiesFor: (w: Workload) => Authorization[] = (w) => state.policiesFor(w),
): InboundRequest | InboundRefusal {
  const authority = head.authority ?? '';
  const dest = local.current();
  const source = state.workloadByAddr(dest?.network ?? config.network, peer.ip);
  // ztunnel reads the client's baggage only with ENABLE_RESPONSE_BAGGAGE (its `enable_enhanced_baggage`).
  const derivedSource = config.enableResponseBaggage
    ? parseBaggage(head.fields.filter(([name]) => name === 'baggage').map(([, value]) => value))
    : NO_BAGGAGE;
  const addrs = {
    src: peer.addr,
    originalDst: authority,
    actualDst: formatHostPort(peer.localIp, HBONE_PORT),
    hboneAddr: authority,
  };
  const info = (service: Service | undefined, rbac?: RbacConnection): ConnectionInfo =>
    connectionInfo(
      local.key,
      addrs,
      {
        reporter: 'destination',
        source,
        sourceIdentity: peer.identity,
        derivedSource,
        destination: dest,
        destinationService: service,
        mtls: true,
      },
      rbac,
    );
  const refuse = (
    status: InboundRefusal['status'],
    flags: ResponseFlags,
    error: MeshError,
    service?: Service,
  ): InboundRefusal => ({ ok: false, status, flags, error, built: false, info: info(service), policy: undefined });

  if (head.method !== 'CONNECT')
    return refuse(400, '-', new MeshError('ZT_ERR_HBONE_BAD_REQUEST', `method ${head.method} is not CONNECT`));
  const target = parseHostPort(authority);
  if (target === undefined)
    return refuse(400, '-', new MeshError('ZT_ERR_HBONE_BAD_REQUEST', `":authority" "${authority}" is not host:port`));
  if (dest === undefined) {
    const e = new MeshError('ZT_ERR_UNKNOWN_WORKLOAD', `workload ${local.key} is no longer known to this ztunnel`);
    return refuse(503, 'CONNECT', e);
  }
  const mismatch = validateDestination(state, dest, peer, target.host);
  if (mismatch !== undefined) return refuse(400, '-', mismatch);
  const up = findInboundUpstream(state, dest, target, authority);
  if (up.error !== undefined) return refuse(503, 'CONNECT', up.error, up.service);
  // Telemetry only: a CONNECT to an IP names no service, so the guess names one; refusals from here on count
  // against it too.
  const service = up.service ?? guessInboundService(state, dest, up.port, forwardedHost(head.fields));
  // ztunnel checks its own ports once the target port is resolved (`find_inbound_upstream`).
  if (ILLEGAL_PORTS.has(up.port)) {
    const e = new MeshError('ZT_ERR_SELF_CALL', `target port ${up.port} belongs to ztunnel itself`);
    return refuse(503, 'CONNECT', e, service);
  }
  const rbac: RbacConnection = { srcIp: peer.ip, dstIp: peer.localIp, dstPort: up.port, srcIdentity: peer.identity };
  const policy = evaluate(policiesFor(dest), rbac);
  if (!policy.allowed) {
    const error = new MeshError('ZT_ERR_POLICY_DENIED', policy.reason);
    return { ok: false, status: 401, flags: 'DENY', error, built: true, info: info(service, rbac), policy };
  }
  return {
    ok: true,
    upstream: { ip: peer.localIp, port: up.port },
    destination: dest,
    info: info(service, rbac),
    policy,
  };
}

/**
 * A CONNECT to an IP names the IP the connection arrived on (ztunnel `validate_destination`): a dual-stack workload is
 * reached on each family's own listener, never across them. The one exception is a workload that is the waypoint of
 * the workload or service the target names: it receives the traffic bound there. A hostname is checked against the
 * services later.
 */
function validateDestination(
  state: ProxyState,
  dest: Workload,
  peer: InboundPeer,
  host: string,
): MeshError | undefined {
  if (net.isIP(host) === 0 || host === peer.localIp) return undefined;
  if (isWaypointFor(state, dest.network, host, dest, peer.localIp)) return undefined;
  return new MeshError(
    'ZT_ERR_HBONE_IP_MISMATCH',
    `CONNECT target ${host} is not the IP this connection arrived on (${peer.localIp}), nor bound to it as its waypoint`,
  );
}

/** The app port a CONNECT reaches, with the service it named, or why it reaches none (with that service, if any). */
type InboundUpstream =
  | { readonly port: number; readonly service: Service | undefined; readonly error?: undefined }
  | { readonly error: MeshError; readonly service: Service | undefined };

/**
 * The app port a CONNECT target reaches on `dest` (ztunnel `find_inbound_upstream`): an IP target names it (its own,
 * or, for a waypoint, the address it stands in front of); a hostname must be a service's, its port mapped to the
 * target port of this workload's endpoint, else the service's.
 */
function findInboundUpstream(
  state: ProxyState,
  dest: Workload,
  target: { readonly host: string; readonly port: number },
  authority: string,
): InboundUpstream {
  if (net.isIP(target.host) !== 0) return { port: target.port, service: undefined };
  const service = state.serviceByHostname(target.host, dest.namespace);
  const port = service?.endpoints[dest.uid]?.port[String(target.port)] ?? service?.ports[String(target.port)];
  if (port === undefined || port === 0)
    return {
      error: new MeshError('ZT_ERR_SERVICE_PORT', `no service port for ${authority} on workload ${dest.uid}`),
      service,
    };
  return { port, service };
}

/** The service a client names in `Forwarded: host=` (ztunnel `parse_forwarded_host`). */
function forwardedHost(fields: RequestParts['fields']): string | undefined {
  const forwarded = fields.find(([name]) => name === 'forwarded')?.[1];
  return /(?:^|;)\s*host=("?)([^";,]+)\1/i.exec(forwarded ?? '')?.[2];
}
