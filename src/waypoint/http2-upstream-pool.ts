/**
 * The proxy's HTTP/2 connections to the endpoints behind it (a Service port whose app protocol is HTTP2 or GRPC), as
 * Envoy keeps one multiplexed upstream connection per endpoint: requests to an endpoint share one HTTP/2 session
 * over one HBONE tunnel (`open`), made when the first needs it. A session that ends, fails or is sent GOAWAY is let
 * go, and the next request makes a new one; one idle for `IDLE_MS` is closed.
 */
import http2 from 'node:http2';
import type { Duplex } from 'node:stream';
import { formatHostPort } from '../lib/ip.js';
import { IDLE_MS } from './upstream-pool.js';

export class Http2UpstreamPool {
  private readonly sessions = new Map<string, Promise<http2.ClientHttp2Session>>();

  constructor(
    private readonly open: (peer: string, ip: string, port: number) => Promise<Duplex>,
    private readonly idleMs: number = IDLE_MS,
  ) {}

  /** A session to `ip:port`: the one it holds, or a new one (`peer`, the client, names the tunnel's `Forwarded`). */
  session(peer: string, ip: string, port: number): Promise<http2.ClientHttp2Session> {
    const key = formatHostPort(ip, port);
    let s = this.sessions.get(key);
    if (s === undefined) {
      const made = this.connect(peer, ip, port, () => {
        if (this.sessions.get(key) === made) this.sessions.delete(key);
      });
      this.sessions.set(key, (s = made));
    }
    return s;
  }

  private async connect(peer: string, ip: string, port: number, forget: () => void): Promise<http2.ClientHttp2Session> {
    let tunnel: Duplex;
    try {
      tunnel = await this.open(peer, ip, port);
    } catch (e) {
      forget();
      throw e;
    }
    const session = http2.connect('http://upstream', { createConnection: () => tunnel });
    // Errors reach the streams in flight; the session is only let go.
    session.on('error', forget);
    session.once('close', forget);
    session.once('goaway', forget);
    session.setTimeout(this.idleMs, () => {
      forget();
      session.close();
    });
    return session;
  }

  /** Closes every session. */
  destroy(): void {
    for (const s of this.sessions.values())
      void s.then(
        (x) => x.destroy(),
        () => undefined,
      );
    this.sessions.clear();
  }
}
