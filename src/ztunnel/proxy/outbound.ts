import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import net from 'node:net';
import { describeError, MeshError } from '../../lib/errors.js';
import { formatHostPort, isLoopback } from '../../lib/ip.js';
import { identityToString } from '../../lib/spiffe.js';
import { ILLEGAL_PORTS, WORKLOAD_WAIT_MS } from '../config.js';
import { HBONE_PORT } from '../../lib/istio-ports.js';
import { resolveUpstream, type Upstream } from '../state/upstream.js';
import { resolveWorkloadHostname } from '../state/resolve-hostname.js';
import { workloadIdentity, type Workload } from '../state/workload.js';
import type { ResponseFlags, TrafficParties } from '../admin/metrics.js';
import { connectionInfo, type ConnectionInfo } from './connection-info.js';
import { baggageFor } from './baggage.js';
import type { LocalWorkloadInformation } from './local-workload.js';
import type { ProxyContext } from './proxy-context.js';
import { relay } from './relay.js';
import { H2ErrorCode } from '../../h2/frame.js';

/** Why an outbound connection could not be set up, for the capture path's own reply (e.g. a SOCKS5 code). */
export type OutboundFailure = 'denied' | 'unreachable' | 'refused' | 'error';

export interface OutboundSetup {
  readonly upstream: Duplex;
  readonly info: ConnectionInfo;
}

/** Records a failed outbound connection and throws; `built` is the connection when it failed after it was built. */
type Fail = (err: MeshError, flags: ResponseFlags, built?: ConnectionInfo) => never;

/** Maps an HBONE status to what the capture path should tell the app. */
export function failureKind(e: unknown): OutboundFailure {
  if (e instanceof MeshError) {
    if (e.code === 'ZT_ERR_POLICY_DENIED') return 'denied';
    if (
      e.code === 'ZT_ERR_NO_HEALTHY_UPSTREAM' ||
      e.code === 'ZT_ERR_UNKNOWN_WAYPOINT' ||
      e.code === 'ZT_ERR_HBONE_CONNECT_TIMEOUT' ||
      e.code === 'ZT_ERR_SERVICE_PORT'
    )
      return 'unreachable';
    if (e.code === 'ZT_ERR_UPSTREAM_CONNECT' || e.code === 'ZT_ERR_HBONE_STATUS') return 'refused';
  }
  return 'error';
}

/** The response flag of an HBONE connect that failed before any answer (ztunnel's `ResponseFlags`). */
const CONNECT_FAILURE_FLAGS: Readonly<Record<string, ResponseFlags>> = {
  ZT_ERR_IDENTITY_MISMATCH: 'IDENTITY_ERROR',
  ZT_ERR_HBONE_HANDSHAKE: 'TLS_FAILURE',
};

/** What an error status from the destination ztunnel usually means, for the log. */
const CONNECT_STATUS_HINTS: Readonly<Record<number, string>> = {
  503: ' (app not reachable or port not served)',
  400: ' (bad request)',
};

/**
 * The address to dial from: the one the app's connection was captured on, unless the destination is of the other
 * address family (a SOCKS5 client on an IPv4 listener may ask for an IPv6 target). Then the workload's own address
 * of that family, as its app would have used; with none, the kernel chooses.
 */
function sourceIpFor(source: Workload, captured: string, dstIp: string): string | undefined {
  const family = net.isIP(dstIp);
  if (net.isIP(captured) === family) return captured;
  return source.workloadIps.find((ip) => net.isIP(ip) === family);
}

/**
 * Who an outbound connection from `source` to `up` is between, as the source's ztunnel reports it; before the
 * upstream is known, only the source. Over HBONE the source is the identity its certificate presents.
 */
function outboundParties(source: Workload | undefined, up?: Upstream): TrafficParties {
  const hbone = up?.kind === 'waypoint' || (up?.kind === 'workload' && up.protocol === 'HBONE');
  return {
    reporter: 'source',
    source,
    sourceIdentity: hbone && source !== undefined ? workloadIdentity(source) : undefined,
    // Through a waypoint, the destination reported is the waypoint (ztunnel's `actual_destination_workload`).
    destination: up === undefined || up.kind === 'passthrough' ? undefined : up.workload,
    destinationService: up?.service,
    mtls: hbone,
  };
}

/**
 * Outbound for one local workload: decides the upstream (ztunnel `src/proxy/outbound.rs`), connects to it (HBONE through the pool, or
 * plain TCP), and hands back a duplex to relay to. The caller reports success to the app, then calls `relay`.
 */
export class Outbound {
  constructor(
    private readonly ctx: ProxyContext,
    private readonly local: LocalWorkloadInformation,
  ) {}

  /** Sets up the upstream for the app's connection from `src` (its `ip:port` in logs) to `dstIp:dstPort`. */
  async connect(src: string, srcIp: string, dstIp: string, dstPort: number): Promise<OutboundSetup> {
    const { state, connections } = this.ctx;
    const uid = this.local.key;
    const source = await this.local.wait();
    const originalDst = formatHostPort(dstIp, dstPort);
    const fail: Fail = (err, flags, built) => {
      if (built !== undefined) connections.builtThenFailed(built, flags, err);
      else {
        const info = connectionInfo(uid, { src, originalDst, actualDst: originalDst }, outboundParties(source));
        connections.failed(info, flags, err);
      }
      throw err;
    };
    if (source === undefined)
      fail(
        new MeshError(
          'ZT_ERR_UNKNOWN_SOURCE_WORKLOAD',
          `workload ${uid} is not known to this ztunnel (waited ${WORKLOAD_WAIT_MS / 1000}s)`,
        ),
        'CONNECT',
      );
    if (isLoopback(dstIp) && ILLEGAL_PORTS.has(dstPort))
      fail(new MeshError('ZT_ERR_SELF_CALL', `refusing to proxy to ztunnel's own port ${dstPort}`), '-');
    let up: Upstream;
    try {
      up = resolveUpstream(state, source, dstIp, dstPort, srcIp);
      if (up.kind !== 'passthrough' && up.ip === '')
        up = { ...up, ip: await resolveWorkloadHostname(up.workload.hostname, net.isIP(dstIp)) };
    } catch (e) {
      return fail(
        e instanceof MeshError ? e : new MeshError('ZT_ERR_NO_HEALTHY_UPSTREAM', describeError(e)),
        'CONNECT',
      );
    }
    const fromIp = sourceIpFor(source, srcIp, up.ip);
    if (up.kind === 'passthrough' || (up.kind === 'workload' && up.protocol === 'TCP')) {
      const ip = up.ip;
      const port = up.kind === 'passthrough' ? up.port : up.targetPort;
      const actualDst = formatHostPort(ip, port);
      const info = connectionInfo(uid, { src, originalDst, actualDst }, outboundParties(source, up));
      try {
        const sock = await this.ctx.sockets.connect(ip, port, fromIp);
        return { upstream: sock, info };
      } catch (e) {
        return fail(
          e instanceof MeshError ? e : new MeshError('ZT_ERR_UPSTREAM_CONNECT', describeError(e)),
          'CONNECT',
          info,
        );
      }
    }
    return this.connectHbone(source, src, fromIp, up, originalDst, fail);
  }

  private async connectHbone(
    source: Workload,
    src: string,
    srcIp: string | undefined,
    up: Extract<Upstream, { kind: 'workload' | 'waypoint' }>,
    originalDst: string,
    fail: Fail,
  ): Promise<OutboundSetup> {
    const srcId = workloadIdentity(source);
    // To a waypoint, the CONNECT names the address the app dialled and the connection goes to the waypoint's port.
    const authority = up.kind === 'waypoint' ? up.target : formatHostPort(up.ip, up.targetPort);
    const hbonePort = up.kind === 'waypoint' ? up.port : HBONE_PORT;
    const fields: [string, string][] = [
      ['baggage', baggageFor(source)],
      // A fresh trace per outbound connection (W3C trace context, sampled flag off).
      ['traceparent', `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-00`],
      ['forwarded', `for="${src}"${up.service !== undefined ? `;host=${up.service.hostname}` : ''}`],
    ];
    const key = {
      srcId: identityToString(srcId),
      dstIds: up.expectedIdentities,
      srcIp,
      dstIp: up.ip,
      dstPort: hbonePort,
    };
    const info = connectionInfo(
      this.local.key,
      { src, originalDst, actualDst: formatHostPort(up.ip, hbonePort), hboneAddr: authority },
      outboundParties(source, up),
    );
    let res;
    try {
      res = await this.ctx.pool.connect(key, () => this.ctx.secrets.fetch(srcId), authority, fields);
    } catch (e) {
      const err = e instanceof MeshError ? e : new MeshError('ZT_ERR_HBONE_STREAM', describeError(e));
      return fail(err, CONNECT_FAILURE_FLAGS[err.code] ?? 'CONNECT', info);
    }
    if (res.status !== 200) {
      // The answer ended the stream from the peer's side; NO_ERROR tells it our side is done too (RFC 9113 §8.1).
      res.stream.reset(H2ErrorCode.NO_ERROR);
      const err =
        res.status === 401
          ? new MeshError(
              'ZT_ERR_POLICY_DENIED',
              `destination ${authority} denied the connection (HTTP 401: authorization policy)`,
            )
          : new MeshError(
              'ZT_ERR_HBONE_STATUS',
              `destination ztunnel answered HTTP ${res.status} for ${authority}${CONNECT_STATUS_HINTS[res.status] ?? ''}`,
            );
      return fail(err, res.status === 401 ? 'DENY' : 'CONNECT', info);
    }
    return { upstream: res.stream, info };
  }

  /**
   * Tracks and relays an established connection until both sides close. `handshake` is what the capture path
   * itself read and wrote (SOCKS5), left out of the byte counts.
   */
  run(client: net.Socket, setup: OutboundSetup, handshake = { read: 0, written: 0 }): void {
    const tracked = this.ctx.connections.open(
      setup.info,
      () => {
        client.destroy();
        setup.upstream.destroy();
      },
      () => [client.bytesRead - handshake.read, client.bytesWritten - handshake.written],
    );
    relay(client, setup.upstream, (err) => tracked.finish(err));
  }
}
