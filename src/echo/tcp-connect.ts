import net from 'node:net';

/** A plain TCP connection (half-open capable, no Nagle), resolved once connected. */
export function tcpConnect(host: string, port: number, localAddress?: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port, localAddress, allowHalfOpen: true, noDelay: true });
    s.once('connect', () => {
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', reject);
  });
}
