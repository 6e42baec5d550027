/**
 * The proxy's kept-alive HTTP/1.1 connections to the endpoints behind it, as Envoy keeps a pool of upstream
 * connections per endpoint: a request goes on an idle connection to its endpoint when there is one, else on a new
 * HBONE tunnel (`open`), which stays for the next request once its exchange is done. An idle connection is closed
 * after `IDLE_MS`, below the 5 s after which Node's HTTP server (a common upstream) closes one, so that a request
 * seldom meets a connection its server is closing; one that does is reported as such (`reusedConnectionReset`) and
 * may be retried, since nothing of it was served.
 *
 * Node's `http.Agent` does the pooling; this subclass gives it HBONE tunnels instead of TCP sockets, and idle timers
 * of its own, since a tunnel is a stream, not a socket with keep-alive and ref counting.
 */
import http from 'node:http';
import type { Duplex } from 'node:stream';

/** How long a connection may stay idle in the pool. */
export const IDLE_MS = 4000;

/**
 * The request options the pool reads: the endpoint, the client's address for the tunnel's `Forwarded`, and how many
 * requests a connection made for it may carry (a DestinationRule's `maxRequestsPerConnection`; 0: any number).
 */
export interface PooledRequestOptions extends http.RequestOptions {
  readonly host: string;
  readonly port: number;
  readonly peer: string;
  readonly maxRequestsPerConnection?: number;
}

/** An error of a request whose connection could not be made. */
export class UpstreamConnectError extends Error {
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
  }
}

export class UpstreamPool extends http.Agent {
  private readonly idle = new WeakMap<Duplex, NodeJS.Timeout>();
  /** Each connection's requests so far, and how many it may carry (0: any number). */
  private readonly uses = new WeakMap<Duplex, { count: number; readonly limit: number }>();

  constructor(
    private readonly open: (peer: string, ip: string, port: number) => Promise<Duplex>,
    private readonly idleMs: number = IDLE_MS,
  ) {
    super({ keepAlive: true, scheduling: 'lifo' });
  }

  override createConnection(
    options: http.ClientRequestArgs,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): undefined {
    const o = options as PooledRequestOptions;
    this.open(o.peer, o.host, o.port).then(
      (s) => {
        this.uses.set(s, { count: 1, limit: o.maxRequestsPerConnection ?? 0 });
        callback?.(null, refless(s));
      },
      (e: unknown) => callback?.(new UpstreamConnectError(e), undefined as never),
    );
    return undefined;
  }

  override keepSocketAlive(socket: Duplex): boolean {
    const u = this.uses.get(socket);
    if (u !== undefined && u.limit > 0 && u.count >= u.limit) return false;
    const timer = setTimeout(() => socket.destroy(), this.idleMs);
    timer.unref();
    this.idle.set(socket, timer);
    return true;
  }

  /** Node's own step also drops the pool's error listener and marks the request as on a reused connection. */
  override reuseSocket(socket: Duplex, req: http.ClientRequest): void {
    clearTimeout(this.idle.get(socket));
    this.idle.delete(socket);
    const u = this.uses.get(socket);
    if (u !== undefined) u.count++;
    super.reuseSocket(socket, req);
  }
}

/** `s` with the no-op `ref` that Node's Agent calls on a connection it takes from the pool: a tunnel has no handle. */
function refless(s: Duplex): Duplex {
  const t = s as Duplex & { ref?: () => unknown };
  t.ref ??= () => t;
  return s;
}

/** Whether a request failed on a kept-alive connection before any answer: its server had closed the connection. */
export function reusedConnectionReset(req: http.ClientRequest, e: Error): boolean {
  return req.reusedSocket && (e as NodeJS.ErrnoException).code === 'ECONNRESET';
}
