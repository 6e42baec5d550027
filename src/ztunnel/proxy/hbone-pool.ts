import http2, { constants as h2c, type ClientHttp2Session, type ClientHttp2Stream, type OutgoingHttpHeaders } from 'node:http2';
import tls from 'node:tls';
import { once } from 'node:events';
import type { Logger } from 'pino';
import { describeError, MeshError } from '../../lib/errors.js';
import { formatHostPort } from '../../lib/ip.js';
import { CONNECT_TIMEOUT_MS, type ZtunnelConfig } from '../config.js';
import { clientTlsOptions } from '../tls/workload-tls.js';
import type { WorkloadCertificate } from '../identity/workload-certificate.js';
import type { SocketFactory } from './socket-factory.js';
import { startKeepalive } from './h2-keepalive.js';
import { DecoupledTransport, maxSessionMemoryMb, transportBounds, type TransportBounds } from './decoupled-transport.js';

/** ztunnel's pool key (ztunnel `src/proxy/pool.rs`): equality on all four parts. */
export interface WorkloadKey {
  readonly srcId: string;
  readonly dstIds: readonly string[];
  /** The address dialed from; undefined lets the kernel choose (no workload address of the destination's family). */
  readonly srcIp: string | undefined;
  readonly dstIp: string;
  readonly dstPort: number;
}

export interface PoolSettings {
  readonly maxStreamsPerConnection: number;
  readonly unusedReleaseTimeoutMs: number;
  readonly streamWindowSize: number;
  readonly connectionWindowSize: number;
  readonly frameSize: number;
}

/** The pool settings ztunnel's config gives (POOL_*, HTTP2_*). */
export function poolSettings(c: ZtunnelConfig): PoolSettings {
  return {
    maxStreamsPerConnection: c.poolMaxStreamsPerConnection,
    unusedReleaseTimeoutMs: c.poolUnusedReleaseTimeoutMs,
    streamWindowSize: c.http2StreamWindowSize,
    connectionWindowSize: c.http2ConnectionWindowSize,
    frameSize: c.http2FrameSize,
  };
}

type ConnState = { t: 'ready' } | { t: 'draining'; why: string } | { t: 'closed' };

class PooledConnection {
  state: ConnState = { t: 'ready' };
  active = 0;
  idleTimer: NodeJS.Timeout | undefined;
  constructor(
    readonly session: ClientHttp2Session,
    readonly limit: number,
  ) {}

  hasCapacity(): boolean {
    return this.state.t === 'ready' && this.active < this.limit && !this.session.destroyed && !this.session.closed;
  }
}

interface KeyEntry {
  readonly conns: PooledConnection[];
  dialing: Promise<PooledConnection> | undefined;
}

/**
 * Pooled HBONE connections (ztunnel `src/proxy/pool.rs`). Streams go to a connection of the same key with spare capacity;
 * concurrent requesters share one dial; a connection that gets GOAWAY drains while new streams use a fresh one;
 * connections unused for `unusedReleaseTimeoutMs` are closed.
 */
export class HbonePool {
  private readonly entries = new Map<string, KeyEntry>();
  private closing = false;
  private readonly bounds: TransportBounds;

  constructor(
    private readonly settings: PoolSettings,
    private readonly sockets: SocketFactory,
    private readonly log: Logger,
  ) {
    this.bounds = transportBounds(settings.connectionWindowSize);
  }

  /** Number of open HBONE connections (all keys), for tests and `/config_dump`. */
  connectionCount(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.conns.length;
    return n;
  }

  /**
   * Opens a CONNECT stream to `key.dstIp:key.dstPort` with `headers`, dialing if needed with `cert`.
   * Resolves with the stream and its response status.
   */
  async connect(key: WorkloadKey, cert: () => Promise<WorkloadCertificate>, headers: OutgoingHttpHeaders): Promise<{ stream: ClientHttp2Stream; status: number }> {
    if (this.closing) throw new MeshError('ZT_ERR_SHUTTING_DOWN', 'ztunnel is shutting down');
    const conn = await this.checkout(key, cert);
    let stream: ClientHttp2Stream;
    try {
      stream = conn.session.request(headers, { endStream: false });
    } catch (e) {
      this.release(conn, key);
      throw new MeshError('ZT_ERR_HBONE_STREAM', `cannot open HBONE stream to ${formatHostPort(key.dstIp, key.dstPort)}: ${describeError(e)}`);
    }
    stream.once('close', () => this.release(conn, key));
    const status = await new Promise<number>((resolve, reject) => {
      const fail = (e: MeshError): void => {
        clearTimeout(timer);
        reject(e);
      };
      const onError = (e: Error): void => fail(new MeshError('ZT_ERR_HBONE_STREAM', `HBONE stream to ${formatHostPort(key.dstIp, key.dstPort)} failed: ${describeError(e)}`));
      const onClose = (): void => fail(new MeshError('ZT_ERR_HBONE_STREAM', `HBONE stream to ${formatHostPort(key.dstIp, key.dstPort)} closed before a response (code ${stream.rstCode ?? '?'})`));
      // A peer that never answers must not hold the app: the same bound as the TCP connect (ztunnel's 10s).
      const timer = setTimeout(() => {
        stream.off('close', onClose);
        stream.close(h2c.NGHTTP2_CANCEL);
        reject(new MeshError('ZT_ERR_HBONE_CONNECT_TIMEOUT', `no response to the HBONE CONNECT from ${formatHostPort(key.dstIp, key.dstPort)} within ${CONNECT_TIMEOUT_MS / 1000}s`));
      }, CONNECT_TIMEOUT_MS);
      timer.unref();
      stream.once('error', onError);
      stream.once('close', onClose);
      stream.once('response', (h) => {
        clearTimeout(timer);
        stream.off('error', onError);
        stream.off('close', onClose);
        resolve(Number(h[':status']));
      });
    });
    return { stream, status };
  }

  /** Stops pooling; open connections finish their streams and close. */
  close(): void {
    this.closing = true;
    for (const e of this.entries.values()) for (const c of e.conns) this.retire(c, 'shutdown');
  }

  /** Closes every connection immediately. */
  destroy(): void {
    this.closing = true;
    for (const e of this.entries.values()) for (const c of e.conns) c.session.destroy();
  }

  private keyString(k: WorkloadKey): string {
    return `${k.srcId}|${[...k.dstIds].sort().join(',')}|${k.srcIp ?? '*'}|${formatHostPort(k.dstIp, k.dstPort)}`;
  }

  private async checkout(key: WorkloadKey, cert: () => Promise<WorkloadCertificate>): Promise<PooledConnection> {
    const ks = this.keyString(key);
    let entry = this.entries.get(ks);
    if (entry === undefined) {
      entry = { conns: [], dialing: undefined };
      this.entries.set(ks, entry);
    }
    for (;;) {
      const c = entry.conns.find((x) => x.hasCapacity());
      if (c !== undefined) {
        c.active++;
        clearTimeout(c.idleTimer);
        return c;
      }
      if (entry.dialing !== undefined) {
        await entry.dialing;
        continue;
      }
      const e = entry;
      const dial = this.dial(key, cert).then((nc) => {
        e.conns.push(nc);
        this.watch(nc, e, ks);
        return nc;
      });
      e.dialing = dial;
      void dial.finally(() => {
        if (e.dialing === dial) e.dialing = undefined;
      }).catch(() => undefined);
      try {
        await dial;
      } catch (err) {
        if (e.conns.length === 0 && this.entries.get(ks) === e) this.entries.delete(ks);
        throw err;
      }
    }
  }

  private release(c: PooledConnection, key: WorkloadKey): void {
    c.active--;
    if (c.active > 0 || c.state.t !== 'ready') {
      if (c.active === 0 && c.state.t === 'draining') c.session.close();
      return;
    }
    clearTimeout(c.idleTimer);
    c.idleTimer = setTimeout(() => {
      if (c.active === 0) {
        this.log.debug({ dst: formatHostPort(key.dstIp, key.dstPort) }, 'closing unused HBONE connection');
        this.retire(c, 'unused');
      }
    }, this.settings.unusedReleaseTimeoutMs);
    c.idleTimer.unref();
  }

  private retire(c: PooledConnection, why: string): void {
    if (c.state.t !== 'ready') return;
    c.state = { t: 'draining', why };
    clearTimeout(c.idleTimer);
    if (c.active === 0) c.session.close();
  }

  private watch(c: PooledConnection, entry: KeyEntry, ks: string): void {
    const remove = (): void => {
      const i = entry.conns.indexOf(c);
      if (i >= 0) entry.conns.splice(i, 1);
      if (entry.conns.length === 0 && entry.dialing === undefined && this.entries.get(ks) === entry) this.entries.delete(ks);
    };
    c.session.on('goaway', () => {
      // In-flight streams finish; new ones go to a fresh connection.
      if (c.state.t === 'ready') c.state = { t: 'draining', why: 'GOAWAY' };
      remove();
    });
    c.session.once('close', () => {
      c.state = { t: 'closed' };
      clearTimeout(c.idleTimer);
      remove();
    });
  }

  private async dial(key: WorkloadKey, certFn: () => Promise<WorkloadCertificate>): Promise<PooledConnection> {
    const cert = await certFn();
    const tcp = await this.sockets.connect(key.dstIp, key.dstPort, key.srcIp, 'maybe a NetworkPolicy is blocking HBONE port 15008');
    const socket = tls.connect({ ...clientTlsOptions(cert, key.dstIds), socket: tcp });
    const timer = setTimeout(() => socket.destroy(new MeshError('ZT_ERR_HBONE_HANDSHAKE', `HBONE handshake with ${formatHostPort(key.dstIp, key.dstPort)} timed out`)), CONNECT_TIMEOUT_MS);
    timer.unref();
    try {
      await once(socket, 'secureConnect');
      if (socket.alpnProtocol !== 'h2') throw new MeshError('ZT_ERR_HBONE_HANDSHAKE', `peer ${formatHostPort(key.dstIp, key.dstPort)} did not negotiate ALPN h2`);
      const session = http2.connect(`https://${formatHostPort(key.dstIp, key.dstPort)}`, {
        createConnection: () => new DecoupledTransport(socket, this.bounds),
        settings: {
          initialWindowSize: this.settings.streamWindowSize,
          maxFrameSize: this.settings.frameSize,
          maxHeaderListSize: 16 * 1024,
          enablePush: false,
        },
        peerMaxConcurrentStreams: this.settings.maxStreamsPerConnection,
        maxSessionMemory: maxSessionMemoryMb(this.bounds),
      });
      session.on('error', (e) => this.log.debug({ dst: formatHostPort(key.dstIp, key.dstPort), error: describeError(e) }, 'HBONE connection error'));
      const [settings] = (await once(session, 'remoteSettings')) as [http2.Settings];
      session.setLocalWindowSize(this.settings.connectionWindowSize);
      startKeepalive(session, (why) => {
        this.log.warn({ dst: formatHostPort(key.dstIp, key.dstPort), reason: why }, 'HBONE connection is dead; closing it');
        session.destroy(new MeshError('ZT_ERR_HBONE_CONNECTION_LOST', `HBONE connection to ${formatHostPort(key.dstIp, key.dstPort)} lost: ${why}`));
      });
      const limit = Math.min(this.settings.maxStreamsPerConnection, settings.maxConcurrentStreams ?? Infinity);
      return new PooledConnection(session, limit);
    } catch (e) {
      socket.destroy();
      if (e instanceof MeshError) throw e;
      throw new MeshError('ZT_ERR_HBONE_HANDSHAKE', `HBONE handshake with ${formatHostPort(key.dstIp, key.dstPort)} failed: ${describeError(e)}`, { cause: e });
    } finally {
      clearTimeout(timer);
    }
  }
}
