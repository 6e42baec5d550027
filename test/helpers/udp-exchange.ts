import dgram from 'node:dgram';
import { once } from 'node:events';

/** One raw UDP exchange with a DNS server at `ip:port`: the first datagram back, or undefined when none came within `timeoutMs`. */
export async function udpExchange(
  ip: string,
  port: number,
  msg: Buffer,
  timeoutMs = 2000,
): Promise<Buffer | undefined> {
  const s = dgram.createSocket('udp4');
  try {
    s.send(msg, port, ip);
    const timer = new AbortController();
    const t = setTimeout(() => timer.abort(), timeoutMs);
    try {
      const [reply] = (await once(s, 'message', { signal: timer.signal })) as [Buffer];
      return reply;
    } catch {
      return undefined;
    } finally {
      clearTimeout(t);
    }
  } finally {
    s.close();
  }
}
