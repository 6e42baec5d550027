import net from 'node:net';
import { MeshError } from '../../lib/errors.js';
import { canonicalIp, formatHostPort } from '../../lib/ip.js';
import { listenInNetns, originalDst, tcpSocketInNetns } from '../../native/native.js';
import { INPOD_LISTEN_BACKLOG } from '../config.js';
import { APP_SOCKET_OPTIONS, connectSocket, localDst, type SocketFactory } from '../proxy/socket-factory.js';

/** What a listen error in a pod usually means, for the operator. */
const BIND_HINTS: Readonly<Record<string, string>> = {
  EADDRINUSE: ' (another process in the pod owns it; with INPOD_PORT_REUSE=false, also an older ztunnel)',
  EPERM: ' (IP_TRANSPARENT and SO_MARK need CAP_NET_ADMIN)',
};

export interface NetnsSocketOptions {
  /** SO_MARK on every socket, so the pod's rules let ztunnel's own packets through (PACKET_MARK, default 0x539). */
  readonly mark: number;
  /** SO_REUSEPORT on listeners, so a new ztunnel can take over from an old one (INPOD_PORT_REUSE). */
  readonly reusePort: boolean;
}

/**
 * ztunnel's in-pod socket factory (ztunnel `src/inpod/config.rs` `InPodSocketFactory`): every socket is made inside
 * the pod's network namespace and carries the in-pod mark. Listeners get SO_REUSEPORT and IP_TRANSPARENT, so the
 * app sees its peers' own addresses; a connect on a peer's behalf binds the peer's address first with
 * IP_TRANSPARENT + IP_FREEBIND (ztunnel `src/proxy.rs` `freebind_connect`), unless it is the destination itself.
 * The namespace fd stays the caller's; after `close()` no socket is made with it any more.
 */
export class NetnsSocketFactory implements SocketFactory {
  private closed = false;

  constructor(
    private readonly netns: number,
    private readonly options: NetnsSocketOptions,
  ) {}

  async listen(server: net.Server, host: string, port: number): Promise<void> {
    this.checkOpen();
    try {
      await listenInNetns(server, this.netns, {
        host,
        port,
        mark: this.options.mark,
        reusePort: this.options.reusePort,
        transparent: true,
        backlog: INPOD_LISTEN_BACKLOG,
      });
    } catch (e) {
      if (e instanceof MeshError) throw e;
      const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      const why = BIND_HINTS[code] ?? '';
      throw new MeshError(
        'ZT_ERR_BIND',
        `cannot listen on ${formatHostPort(host, port)} in the pod's network namespace: ${code}${why}`,
        { cause: e },
      );
    }
  }

  async connect(host: string, port: number, localAddress: string | undefined, hint?: string): Promise<net.Socket> {
    this.checkOpen();
    const spoof = localAddress !== undefined && localAddress !== host;
    const s = tcpSocketInNetns(
      this.netns,
      net.isIPv6(host) ? 6 : 4,
      { mark: this.options.mark, transparent: spoof, freebind: spoof },
      APP_SOCKET_OPTIONS,
    );
    return connectSocket(s, host, port, spoof ? localAddress : undefined, hint);
  }

  /** The peer's own address: the listeners are transparent, so the app can be connected to from it. */
  inboundSource(peerIp: string): string {
    return peerIp;
  }

  /** Where an iptables REDIRECT in the pod sent the connection from (SO_ORIGINAL_DST), else where it arrived. */
  originalDst(socket: net.Socket): { ip: string; port: number } {
    try {
      const d = originalDst(socket);
      return { ip: canonicalIp(d.address) ?? d.address, port: d.port };
    } catch {
      return localDst(socket);
    }
  }

  close(): void {
    this.closed = true;
  }

  private checkOpen(): void {
    if (this.closed)
      throw new MeshError('ZT_ERR_POD_STOPPED', "the pod's proxy stopped: no new sockets in its network namespace");
  }
}
