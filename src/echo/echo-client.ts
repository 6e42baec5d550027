import type net from 'node:net';
import { parseHostPort } from '../lib/ip.js';
import { MeshError } from '../lib/errors.js';
import { socks5Connect } from './socks5-client.js';
import { tcpConnect } from './tcp-connect.js';

export interface EchoClientOptions {
  readonly target: string;
  readonly socks5?: string | undefined;
  /**
   * Local address to connect from. Through a ztunnel's SOCKS5 port the client must be the workload itself, so it
   * defaults to the SOCKS5 proxy's IP (the ztunnel listens on `<workload IP>:15080`).
   */
  readonly source?: string | undefined;
  readonly count: number;
  readonly http: boolean;
  readonly message: string;
  readonly timeoutMs: number;
}

export interface EchoResult {
  readonly i: number;
  readonly ok: boolean;
  readonly ms: number;
  readonly response?: string;
  readonly error?: string;
}

function addr(s: string, what: string): { host: string; port: number } {
  const hp = parseHostPort(s);
  if (hp === undefined) throw new MeshError('AMESH_ERR_CONFIG', `${what}: "${s}" is not host:port`);
  return hp;
}

/** Sends `count` requests (TCP echo or HTTP GET), each on its own connection, directly or through SOCKS5. */
export async function runEchoClient(o: EchoClientOptions): Promise<EchoResult[]> {
  const t = addr(o.target, '--target');
  const proxy = o.socks5 === undefined ? undefined : addr(o.socks5, '--socks5');
  const source = o.source ?? proxy?.host;
  const out: EchoResult[] = [];
  for (let i = 0; i < o.count; i++) {
    const start = performance.now();
    try {
      const sock =
        proxy === undefined
          ? await tcpConnect(t.host, t.port, source)
          : await socks5Connect(proxy.host, proxy.port, t.host, t.port, source);
      const payload = o.http ? `GET / HTTP/1.1\r\nHost: ${o.target}\r\nConnection: close\r\n\r\n` : o.message;
      const response = await exchange(sock, payload, o.timeoutMs);
      const body = o.http ? response.slice(response.indexOf('\r\n\r\n') + 4) : response;
      const ok = o.http ? response.startsWith('HTTP/1.1 200') : response === o.message;
      out.push({
        i,
        ok,
        ms: performance.now() - start,
        response: body,
        ...(ok ? {} : { error: `unexpected response: ${response.slice(0, 80)}` }),
      });
    } catch (e) {
      out.push({ i, ok: false, ms: performance.now() - start, error: (e as Error).message });
    }
  }
  return out;
}

/** Writes `payload`, half-closes, and reads until the server closes. */
function exchange(s: net.Socket, payload: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`no complete response within ${timeoutMs}ms`));
    }, timeoutMs);
    s.on('data', (d: Buffer) => chunks.push(d));
    s.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    s.once('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    s.resume();
    s.end(payload);
  });
}
