import net from 'node:net';
import type { DuplexOptions } from 'node:stream';
import { MeshError } from '../../lib/errors.js';
import { canonicalIp, formatHostPort, isLoopback } from '../../lib/ip.js';
import { CONNECT_TIMEOUT_MS } from '../config.js';
import { tcpSocket } from '../../native/native.js';

/** What a listen error usually means here, for the operator. */
const LISTEN_HINTS: Readonly<Record<string, string>> = {
  EADDRNOTAVAIL: ' (the workload IP is not an address of this host; in local mode use addresses such as 127.0.10.1)',
  EADDRINUSE: ' (another process, maybe another ztunnel, owns it)',
};

/**
 * The one seam through which ztunnel creates sockets. Local mode binds on the host (workload IPs are local
 * addresses); in-pod mode creates the same sockets inside a pod's network namespace (`inpod/netns-socket-factory.ts`).
 */
export interface SocketFactory {
  /** Starts `server` listening on `host:port`. */
  listen(server: net.Server, host: string, port: number): Promise<void>;
  /** Connects to `host:port` from `localAddress` (port 0). Resolves once connected. */
  connect(host: string, port: number, localAddress: string | undefined, hint?: string): Promise<net.Socket>;
  /**
   * The address to connect to an app at `localIp` from on behalf of a peer at `peerIp` (inbound): the peer's own
   * where these sockets can spoof it, as ztunnel does with IP_TRANSPARENT, else an address of this host.
   */
  inboundSource(peerIp: string, localIp: string): string;
  /** Where an accepted connection was headed before capture redirected it (ztunnel `orig_dst_addr_or_default`). */
  originalDst(socket: net.Socket): { ip: string; port: number };
}

/**
 * The stream buffer (high-water mark, bytes) of every socket that faces an app: those ztunnel accepts on its
 * capture and SOCKS5 ports and those it connects to apps. Node's default, 16 KiB, is one HTTP/2 DATA frame: `pipe`
 * then pauses the HBONE stream after each frame and resumes it a loop turn later, once that write has drained, so
 * every 16 KiB cost a loop turn, a writev and a wake-up of the app (docs/performance.md, "App socket buffers").
 * 256 KiB holds what one loop turn decodes from a busy HBONE connection (libuv reads its TLS socket 64 KiB at a
 * time, several times a turn), so it leaves in one writev. It fills only while an app reads slower than its peer
 * sends, and then stops the stream as before.
 */
export const APP_SOCKET_HIGH_WATER_MARK = 256 * 1024;

/** A socket ztunnel connects to an app: half-open allowed (relay needs it), the app-facing buffer. */
export const APP_SOCKET_OPTIONS: net.SocketConstructorOpts & DuplexOptions = Object.freeze({
  allowHalfOpen: true,
  writableHighWaterMark: APP_SOCKET_HIGH_WATER_MARK,
});

/**
 * ztunnel's KEEPALIVE_TIME (ztunnel `src/config.rs`): idle time before the first keepalive probe. The probes after it
 * differ from ztunnel's: Node (libuv) sets TCP_KEEPINTVL 1 s and TCP_KEEPCNT 10 with keepalive, where ztunnel sets
 * 180 s and 9, so a silent peer is dropped after ~190 s instead of ~30 min. Node has no call for those two options,
 * and setting them through the addon is outside its agreed scope (setns, SO_MARK, IP_TRANSPARENT, SO_ORIGINAL_DST, SEQPACKET with
 * SCM_RIGHTS).
 */
export const KEEPALIVE_TIME_MS = 180_000;

/** A listener whose sockets face apps: half-open allowed, TCP_NODELAY (as ztunnel sets it on every socket), the app-facing buffer. */
export const APP_SERVER_OPTIONS: net.ServerOpts = Object.freeze({
  allowHalfOpen: true,
  noDelay: true,
  highWaterMark: APP_SOCKET_HIGH_WATER_MARK,
});

/**
 * The outbound-capture and inbound-passthrough listeners: APP_SERVER_OPTIONS and keepalive after KEEPALIVE_TIME_MS,
 * which ztunnel sets on the sockets those two listeners accept (ztunnel `src/socket.rs` Listener::accept, given
 * the socket config in `src/proxy/outbound.rs` and `src/proxy/inbound_passthrough.rs`; its other listeners get none).
 */
export const CAPTURE_SERVER_OPTIONS: net.ServerOpts = Object.freeze({
  ...APP_SERVER_OPTIONS,
  keepAlive: true,
  keepAliveInitialDelay: KEEPALIVE_TIME_MS,
});

/** Where an accepted connection arrived: the destination when nothing redirected it. */
export function localDst(socket: net.Socket): { ip: string; port: number } {
  const ip = socket.localAddress ?? '';
  return { ip: canonicalIp(ip) ?? ip, port: socket.localPort ?? 0 };
}

/** Local mode: plain host sockets. TCP_NODELAY everywhere, as ztunnel sets it on every socket. */
export class LocalSocketFactory implements SocketFactory {
  async listen(server: net.Server, host: string, port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const onError = (e: NodeJS.ErrnoException): void => {
        reject(
          new MeshError(
            'ZT_ERR_BIND',
            `cannot listen on ${formatHostPort(host, port)}: ${e.code ?? e.message}${LISTEN_HINTS[e.code ?? ''] ?? ''}`,
            { cause: e },
          ),
        );
      };
      server.once('error', onError);
      server.listen({ host, port, backlog: 1024, exclusive: true }, () => {
        server.off('error', onError);
        resolve();
      });
    });
  }

  /** From a chosen address, the port is picked at connect (`tcpSocket`), so TIME_WAIT from that address never starves bind. */
  connect(host: string, port: number, localAddress: string | undefined, hint?: string): Promise<net.Socket> {
    const s =
      localAddress === undefined
        ? new net.Socket(APP_SOCKET_OPTIONS)
        : tcpSocket(net.isIPv6(localAddress) ? 6 : 4, APP_SOCKET_OPTIONS);
    return connectSocket(s, host, port, localAddress, hint);
  }

  /**
   * The peer's own address where the host allows it (both on loopback, one family: local mode's stand-in for
   * ztunnel's spoofing); otherwise the workload's.
   */
  inboundSource(peerIp: string, localIp: string): string {
    return isLoopback(peerIp) && isLoopback(localIp) && net.isIP(peerIp) === net.isIP(localIp) ? peerIp : localIp;
  }

  originalDst(socket: net.Socket): { ip: string; port: number } {
    return localDst(socket);
  }
}

/**
 * Connects `s` (a new, unconnected socket; half-open allowed, as relay needs) to `host:port` from `localAddress`,
 * with ztunnel's socket options (ztunnel `src/proxy.rs`, DefaultSocketFactory): TCP_NODELAY, keepalive after
 * KEEPALIVE_TIME_MS. They are set on the socket, not passed to `connect()`: Node 20 applies `noDelay` and
 * `keepAlive` only from the Socket constructor's options (and `net.connect`'s), and ignores them in `connect()`.
 * Fails after CONNECT_TIMEOUT_MS.
 */
export function connectSocket(
  s: net.Socket,
  host: string,
  port: number,
  localAddress: string | undefined,
  hint?: string,
): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    s.setNoDelay(true);
    s.setKeepAlive(true, KEEPALIVE_TIME_MS);
    s.connect({ host, port, localAddress });
    const timer = setTimeout(() => {
      s.destroy();
      reject(
        new MeshError(
          'ZT_ERR_HBONE_CONNECT_TIMEOUT',
          `connection to ${formatHostPort(host, port)} timed out after ${CONNECT_TIMEOUT_MS / 1000}s${hint === undefined ? '' : `; ${hint}`}`,
        ),
      );
    }, CONNECT_TIMEOUT_MS);
    timer.unref();
    s.once('connect', () => {
      clearTimeout(timer);
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        new MeshError(
          'ZT_ERR_UPSTREAM_CONNECT',
          `connect to ${formatHostPort(host, port)} failed: ${e.code ?? e.message}`,
          { cause: e },
        ),
      );
    });
  });
}
