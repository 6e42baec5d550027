import dgram from 'node:dgram';
import net from 'node:net';
import { once } from 'node:events';
import { describeError, MeshError } from '../../lib/errors.js';
import { formatHostPort } from '../../lib/ip.js';
import { DNS_PROXY_PORT, INPOD_MARK } from '../../lib/istio-ports.js';
import { listenInNetns, tcpSocketInNetns, udpSocketInNetns, type NetnsRef } from '../../native/native.js';
import { INPOD_LISTEN_BACKLOG } from '../config.js';
import type { DnsUpstreamSockets } from './dns-forwarder.js';

/** The DNS proxy's sockets, bound and listening: UDP sockets and TCP servers, one of each per address. */
export interface DnsListeners {
  readonly udp: readonly dgram.Socket[];
  readonly tcp: readonly net.Server[];
}

/** Binds a proxy's listeners; rejects with nothing left bound when one cannot be. */
export type DnsListen = () => Promise<DnsListeners>;

/** Binds every listener `bind` makes, one address at a time; on a failure closes those already bound. */
async function bindAll(
  hosts: readonly string[],
  bind: (host: string) => Promise<{ udp: dgram.Socket; tcp: net.Server } | undefined>,
): Promise<DnsListeners> {
  const udp: dgram.Socket[] = [];
  const tcp: net.Server[] = [];
  try {
    for (const host of hosts) {
      const l = await bind(host);
      if (l === undefined) continue;
      udp.push(l.udp);
      tcp.push(l.tcp);
    }
  } catch (e) {
    for (const s of udp) s.close();
    for (const s of tcp) s.close();
    throw e;
  }
  return { udp, tcp };
}

function bindError(host: string, port: number, e: unknown): MeshError {
  return new MeshError(
    'ZT_ERR_BIND',
    `cannot bind the DNS proxy on ${formatHostPort(host, port)}: ${describeError(e)}`,
    { cause: e },
  );
}

/** Local mode: UDP and TCP on `port` (0: any) of each host address, on the host. */
export function hostDnsListen(hosts: readonly string[], port: number): DnsListen {
  return () =>
    bindAll(hosts, async (host) => {
      const udp = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
      const tcp = net.createServer();
      try {
        udp.bind(port, host);
        await once(udp, 'listening');
        // One port for both transports, as a resolver expects.
        tcp.listen({ host, port: udp.address().port, exclusive: true });
        await once(tcp, 'listening');
      } catch (e) {
        udp.close();
        tcp.close();
        throw bindError(host, port, e);
      }
      return { udp, tcp };
    });
}

/** Local mode's upstream sockets: plain host sockets. */
export const hostUpstreamSockets: DnsUpstreamSockets = {
  async udp(family) {
    const s = dgram.createSocket(family === 6 ? 'udp6' : 'udp4');
    s.bind(0);
    await once(s, 'listening');
    return s;
  },
  tcp: () => new net.Socket(),
};

/** How a pod's DNS sockets are made: the in-pod mark, and whether listeners share their port (INPOD_PORT_REUSE). */
export interface PodDnsSocketOptions {
  readonly mark: number;
  readonly reusePort: boolean;
}

/** ztunnel's in-pod defaults (ztunnel `src/config.rs`: INPOD_MARK, INPOD_PORT_REUSE=true). */
const POD_DNS_DEFAULTS: PodDnsSocketOptions = { mark: INPOD_MARK, reusePort: true };

/**
 * In-pod: UDP and TCP on 127.0.0.1:15053 and [::1]:15053 inside the pod's network namespace, marked, with
 * SO_REUSEPORT unless INPOD_PORT_REUSE is false, so a new ztunnel binds beside the old one: ztunnel's DNS server
 * binds through the pod's socket factory, the one its proxy listeners use (ztunnel `src/dns/server.rs`,
 * `src/inpod/config.rs`). [::1] is left out when the pod's loopback has no IPv6 (ztunnel `maybe_downgrade_ipv6`).
 */
export function podDnsListen(netns: NetnsRef, port = DNS_PROXY_PORT, options = POD_DNS_DEFAULTS): DnsListen {
  const { mark, reusePort } = options;
  return () =>
    bindAll(['127.0.0.1', '::1'], async (host) => {
      let udp: dgram.Socket;
      try {
        udp = await udpSocketInNetns(netns, { host, port, mark, reusePort });
      } catch (e) {
        if (host === '::1' && (e as NodeJS.ErrnoException).code === 'EADDRNOTAVAIL') return undefined;
        throw e instanceof MeshError ? e : bindError(host, port, e);
      }
      const tcp = net.createServer();
      try {
        await listenInNetns(tcp, netns, { host, port, mark, reusePort, backlog: INPOD_LISTEN_BACKLOG });
      } catch (e) {
        udp.close();
        throw e instanceof MeshError ? e : bindError(host, port, e);
      }
      return { udp, tcp };
    });
}

/**
 * In-pod upstream sockets: made inside the pod's network namespace and marked, so the pod's DNS capture lets them
 * out. A UDP one binds an ephemeral port without SO_REUSEPORT whatever INPOD_PORT_REUSE says: nothing binds
 * beside it, and with it the kernel may give two of them the same port, so one query's reply could reach the
 * other's socket.
 */
export function podUpstreamSockets(netns: NetnsRef, mark = INPOD_MARK): DnsUpstreamSockets {
  return {
    udp: (family) =>
      udpSocketInNetns(netns, { host: family === 6 ? '::' : '0.0.0.0', port: 0, mark, reusePort: false }),
    tcp: (family) => tcpSocketInNetns(netns, family, { mark }),
  };
}
