import net from 'node:net';
import { MeshError } from '../../lib/errors.js';
import { canonicalIp, formatHostPort, isLoopback } from '../../lib/ip.js';
import { CONNECT_TIMEOUT_MS } from '../config.js';

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
        reject(new MeshError('ZT_ERR_BIND', `cannot listen on ${formatHostPort(host, port)}: ${e.code ?? e.message}${e.code === 'EADDRNOTAVAIL' ? ' (the workload IP is not an address of this host; in local mode use addresses such as 127.0.10.1)' : e.code === 'EADDRINUSE' ? ' (another process, maybe another ztunnel, owns it)' : ''}`, { cause: e }));
      };
      server.once('error', onError);
      server.listen({ host, port, backlog: 1024, exclusive: true }, () => {
        server.off('error', onError);
        resolve();
      });
    });
  }

  connect(host: string, port: number, localAddress: string | undefined, hint?: string): Promise<net.Socket> {
    return connectSocket(new net.Socket({ allowHalfOpen: true }), host, port, localAddress, hint);
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
 * with ztunnel's socket options: TCP_NODELAY, keepalive after 180s. Fails after CONNECT_TIMEOUT_MS.
 */
export function connectSocket(s: net.Socket, host: string, port: number, localAddress: string | undefined, hint?: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    s.connect({ host, port, localAddress, noDelay: true, keepAlive: true, keepAliveInitialDelay: 180_000 });
    const timer = setTimeout(() => {
      s.destroy();
      reject(new MeshError('ZT_ERR_HBONE_CONNECT_TIMEOUT', `connection to ${formatHostPort(host, port)} timed out after ${CONNECT_TIMEOUT_MS / 1000}s${hint === undefined ? '' : `; ${hint}`}`));
    }, CONNECT_TIMEOUT_MS);
    timer.unref();
    s.once('connect', () => {
      clearTimeout(timer);
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new MeshError('ZT_ERR_UPSTREAM_CONNECT', `connect to ${formatHostPort(host, port)} failed: ${e.code ?? e.message}`, { cause: e }));
    });
  });
}
