import net from 'node:net';
import { formatHostPort } from '../lib/ip.js';
import { tcpSocket } from '../native/native.js';

/** SOCKS5 CONNECT reply codes (RFC 1928 §6), for messages. */
const REPLIES: Record<number, string> = {
  1: 'general failure',
  2: 'connection not allowed by ruleset',
  3: 'network unreachable',
  4: 'host unreachable',
  5: 'connection refused',
  6: 'TTL expired',
  7: 'command not supported',
  8: 'address type not supported',
};

export class Socks5Error extends Error {
  constructor(
    readonly reply: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Opens a connection to `host:port` through the SOCKS5 proxy at `proxyHost:proxyPort` (no authentication), from
 * `localAddress` when given (its port chosen at connect, so many short connections from one address never starve
 * bind: see `tcpSocket`).
 */
export function socks5Connect(
  proxyHost: string,
  proxyPort: number,
  host: string,
  port: number,
  localAddress?: string,
): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s =
      localAddress === undefined
        ? new net.Socket({ allowHalfOpen: true })
        : tcpSocket(net.isIPv6(localAddress) ? 6 : 4, { allowHalfOpen: true });
    // On the socket, not in connect()'s options, which Node 20 ignores for a socket it did not construct with them.
    s.setNoDelay(true);
    s.connect({ host: proxyHost, port: proxyPort, localAddress });
    let buf = Buffer.alloc(0);
    let stage: 'greeting' | 'reply' = 'greeting';
    const fail = (e: Error): void => {
      s.destroy();
      reject(e);
    };
    s.once('error', fail);
    const closed = (): void => fail(new Error('SOCKS5 proxy closed the connection during the handshake'));
    // The socket is half-open capable, so a proxy's FIN alone does not close it: watch for the end too.
    s.once('end', closed);
    s.once('close', closed);
    s.once('connect', () => s.write(Buffer.from([0x05, 0x01, 0x00])));
    const onData = (d: Buffer): void => {
      buf = Buffer.concat([buf, d]);
      if (stage === 'greeting') {
        if (buf.length < 2) return;
        if (buf[1] !== 0x00) return fail(new Error('SOCKS5 proxy refused the no-authentication method'));
        buf = buf.subarray(2);
        stage = 'reply';
        let addr: Buffer;
        let atyp: number;
        if (net.isIPv4(host)) {
          atyp = 1;
          addr = Buffer.from(host.split('.').map(Number));
        } else if (net.isIPv6(host)) {
          atyp = 4;
          addr = Buffer.alloc(16);
          const full = host.includes('::') ? expand6(host) : host.split(':');
          full.forEach((g, i) => addr.writeUInt16BE(parseInt(g, 16), i * 2));
        } else {
          atyp = 3;
          addr = Buffer.concat([Buffer.from([host.length]), Buffer.from(host, 'latin1')]);
        }
        const p = Buffer.alloc(2);
        p.writeUInt16BE(port);
        s.write(Buffer.concat([Buffer.from([0x05, 0x01, 0x00, atyp]), addr, p]));
      }
      if (stage === 'reply') {
        if (buf.length < 10) return;
        if (buf[1] !== 0x00) {
          return fail(
            new Socks5Error(
              buf[1]!,
              `SOCKS5 connect to ${formatHostPort(host, port)} failed: ${REPLIES[buf[1]!] ?? `reply ${buf[1]}`}`,
            ),
          );
        }
        s.off('data', onData);
        s.removeAllListeners('error');
        s.removeAllListeners('close');
        s.removeAllListeners('end');
        s.pause();
        const rest = buf.subarray(10);
        if (rest.length > 0) s.unshift(rest);
        resolve(s);
      }
    };
    s.on('data', onData);
  });
}

function expand6(h: string): string[] {
  const [a = '', b = ''] = h.split('::');
  const x = a === '' ? [] : a.split(':');
  const y = b === '' ? [] : b.split(':');
  return [...x, ...Array<string>(8 - x.length - y.length).fill('0'), ...y];
}
