import tls from 'node:tls';
import { once } from 'node:events';
import type { Logger } from 'pino';
import { describeError, MeshError } from '../../lib/errors.js';
import { formatHostPort } from '../../lib/ip.js';
import type { ZtunnelConfig } from '../config.js';
import { clientTlsOptions } from '../tls/workload-tls.js';
import type { WorkloadCertificate } from '../identity/workload-certificate.js';
import type { SocketFactory } from './socket-factory.js';
import { H2Session, type H2SessionOptions } from '../../h2/h2-session.js';
import type { H2Stream } from '../../h2/h2-stream.js';
import type { HeaderField } from '../../h2/header-block.js';
import { startKeepalive } from './h2-keepalive.js';
import { hboneSessionOptions } from './hbone-session-options.js';
import { meshErrorFromH2 } from './mesh-error-from-h2.js';

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
  /** How long the TLS handshake of a dial, and the response to a CONNECT, may take. */
  readonly connectTimeoutMs: number;
  /** PING interval and the time a PING may go unanswered before the connection is declared dead. */
  readonly keepaliveIntervalMs: number;
  readonly keepaliveTimeoutMs: number;
  /** Each new connection's HTTP/2 settings (a fresh HPACK codec each call). */
  readonly sessionOptions: () => H2SessionOptions;
}

/** The pool settings ztunnel's config gives (POOL_*, HTTP2_*, the HBONE timeouts). */
export function poolSettings(c: ZtunnelConfig): PoolSettings {
  return {
    maxStreamsPerConnection: c.poolMaxStreamsPerConnection,
    unusedReleaseTimeoutMs: c.poolUnusedReleaseTimeoutMs,
    connectTimeoutMs: c.hboneConnectTimeoutMs,
    keepaliveIntervalMs: c.hboneKeepaliveIntervalMs,
    keepaliveTimeoutMs: c.hboneKeepaliveTimeoutMs,
    sessionOptions: () => hboneSessionOptions(c, 'client'),
  };
}

type ConnState = { t: 'ready' } | { t: 'draining'; why: string } | { t: 'closed' };

class PooledConnection {
  state: ConnState = { t: 'ready' };
  active = 0;
  idleTimer: NodeJS.Timeout | undefined;
  constructor(
    readonly session: H2Session,
    readonly limit: number,
  ) {}

  hasCapacity(): boolean {
    return this.state.t === 'ready' && this.active < this.limit && this.session.canOpenStreams;
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

  constructor(
    private readonly settings: PoolSettings,
    private readonly sockets: SocketFactory,
    private readonly log: Logger,
  ) {}

  /** Number of open HBONE connections (all keys), for tests and `/config_dump`. */
  connectionCount(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.conns.length;
    return n;
  }

  /**
   * Opens a CONNECT stream to `authority` with HBONE's other header `fields`, through a connection to
   * `key.dstIp:key.dstPort`, dialing if needed with `cert`. Resolves with the stream and its response status.
   */
  async connect(
    key: WorkloadKey,
    cert: () => Promise<WorkloadCertificate>,
    authority: string,
    fields: readonly HeaderField[],
  ): Promise<{ stream: H2Stream; status: number }> {
    if (this.closing) throw new MeshError('ZT_ERR_SHUTTING_DOWN', 'ztunnel is shutting down');
    const conn = await this.checkout(key, cert);
    const dst = formatHostPort(key.dstIp, key.dstPort);
    let stream: H2Stream;
    try {
      stream = conn.session.connect(authority, fields);
    } catch (e) {
      this.release(conn, key);
      throw new MeshError(
        'ZT_ERR_HBONE_STREAM',
        `cannot open HBONE stream to ${dst}: ${describeError(meshErrorFromH2(e))}`,
      );
    }
    stream.once('close', () => this.release(conn, key));
    // Between the response and the relay an error has no other listener; the relay reads it from `errored`.
    stream.on('error', () => undefined);
    const status = await new Promise<number>((resolve, reject) => {
      const settle = (): void => {
        clearTimeout(timer);
        stream.off('error', onError);
        stream.off('close', onClose);
        stream.off('response', onResponse);
      };
      const onError = (e: Error): void => {
        settle();
        reject(
          new MeshError('ZT_ERR_HBONE_STREAM', `HBONE stream to ${dst} failed: ${describeError(meshErrorFromH2(e))}`),
        );
      };
      const onClose = (): void => {
        settle();
        reject(
          new MeshError(
            'ZT_ERR_HBONE_STREAM',
            `HBONE stream to ${dst} closed before a response (code ${stream.resetCode ?? '?'})`,
          ),
        );
      };
      const onResponse = (head: { status: number }): void => {
        settle();
        resolve(head.status);
      };
      // A peer that never answers must not hold the app: the same bound as the TCP connect (ztunnel's 10s).
      const timeoutMs = this.settings.connectTimeoutMs;
      const timer = setTimeout(() => {
        settle();
        stream.reset();
        reject(
          new MeshError(
            'ZT_ERR_HBONE_CONNECT_TIMEOUT',
            `no response to the HBONE CONNECT from ${dst} within ${timeoutMs / 1000}s`,
          ),
        );
      }, timeoutMs);
      timer.unref();
      stream.once('error', onError);
      stream.once('close', onClose);
      stream.once('response', onResponse);
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
      if (c !== undefined) return this.take(c);
      const nc = await (entry.dialing ?? this.startDial(key, cert, entry, ks));
      if (nc.hasCapacity()) return this.take(nc);
      // Full already (others waiting on the same dial took its streams): dial another. Never redial a connection
      // that closed as it opened, or a peer that fails every connection would be dialed in a loop.
      if (!nc.session.canOpenStreams)
        throw new MeshError(
          'ZT_ERR_HBONE_HANDSHAKE',
          `HBONE connection to ${formatHostPort(key.dstIp, key.dstPort)} closed as it opened: ${describeError(meshErrorFromH2(nc.session.failure) ?? 'GOAWAY')}`,
        );
    }
  }

  private take(c: PooledConnection): PooledConnection {
    c.active++;
    clearTimeout(c.idleTimer);
    return c;
  }

  /** Dials a connection for `entry`; whoever needs one meanwhile waits for this dial instead of starting another. */
  private startDial(
    key: WorkloadKey,
    cert: () => Promise<WorkloadCertificate>,
    entry: KeyEntry,
    ks: string,
  ): Promise<PooledConnection> {
    const dial = this.dial(key, cert).then(
      (nc) => {
        entry.conns.push(nc);
        this.watch(nc, entry, ks);
        return nc;
      },
      (err: unknown) => {
        if (entry.conns.length === 0 && this.entries.get(ks) === entry) this.entries.delete(ks);
        throw err;
      },
    );
    entry.dialing = dial;
    void dial
      .finally(() => {
        if (entry.dialing === dial) entry.dialing = undefined;
      })
      .catch(() => undefined);
    return dial;
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
      if (entry.conns.length === 0 && entry.dialing === undefined && this.entries.get(ks) === entry)
        this.entries.delete(ks);
    };
    c.session.once('goaway', () => {
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
    const dst = formatHostPort(key.dstIp, key.dstPort);
    const cert = await certFn();
    const tcp = await this.sockets.connect(
      key.dstIp,
      key.dstPort,
      key.srcIp,
      'maybe a NetworkPolicy is blocking HBONE port 15008',
    );
    const socket = tls.connect({ ...clientTlsOptions(cert, key.dstIds), socket: tcp });
    const timer = setTimeout(
      () => socket.destroy(new MeshError('ZT_ERR_HBONE_HANDSHAKE', `HBONE handshake with ${dst} timed out`)),
      this.settings.connectTimeoutMs,
    );
    timer.unref();
    try {
      await once(socket, 'secureConnect');
      if (socket.alpnProtocol !== 'h2')
        throw new MeshError('ZT_ERR_HBONE_HANDSHAKE', `peer ${dst} did not negotiate ALPN h2`);
      const session = new H2Session(socket, this.settings.sessionOptions());
      session.once('close', (e) => {
        if (e !== undefined)
          this.log.debug({ dst, error: describeError(meshErrorFromH2(e)) }, 'HBONE connection error');
      });
      // The peer's SETTINGS complete its preface and carry its stream limit.
      const settings = await new Promise<H2Session['remoteSettings']>((resolve, reject) => {
        session.once('remoteSettings', resolve);
        session.once('close', (e) =>
          reject(e ?? new MeshError('ZT_ERR_HBONE_HANDSHAKE', `peer ${dst} closed the connection before its SETTINGS`)),
        );
      });
      // A peer that broke the protocol right after its SETTINGS (in the same read) has already failed the connection.
      if (!session.canOpenStreams)
        throw new MeshError(
          'ZT_ERR_HBONE_HANDSHAKE',
          `HBONE connection to ${dst} failed as it opened: ${describeError(meshErrorFromH2(session.failure) ?? 'GOAWAY')}`,
        );
      startKeepalive(
        session,
        (why) => {
          this.log.warn({ dst, reason: why }, 'HBONE connection is dead; closing it');
          session.destroy(new MeshError('ZT_ERR_HBONE_CONNECTION_LOST', `HBONE connection to ${dst} lost: ${why}`));
        },
        this.settings.keepaliveIntervalMs,
        this.settings.keepaliveTimeoutMs,
      );
      return new PooledConnection(
        session,
        Math.min(this.settings.maxStreamsPerConnection, settings.maxConcurrentStreams),
      );
    } catch (e) {
      socket.destroy();
      if (e instanceof MeshError && e.code.startsWith('ZT_')) throw e;
      throw new MeshError(
        'ZT_ERR_HBONE_HANDSHAKE',
        `HBONE handshake with ${dst} failed: ${describeError(meshErrorFromH2(e))}`,
        {
          cause: e,
        },
      );
    } finally {
      clearTimeout(timer);
    }
  }
}
