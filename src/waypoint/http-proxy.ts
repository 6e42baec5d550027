/**
 * The waypoint's HTTP/1.1 path, for a destination port whose app protocol is HTTP: `node:http` parses the requests
 * inside the client's HBONE tunnel and writes them, one HBONE stream each, to the destination behind the waypoint,
 * chosen per request (a Service's endpoints are balanced request by request, as Envoy does). Hop-by-hop headers
 * are not forwarded; `x-request-id` is added when the client sent none. A request whose upstream cannot be
 * reached is answered 503 with Envoy's text. Each request is counted in Istio's request metrics with
 * `reporter="waypoint"`.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { H2Stream } from '../h2/h2-stream.js';
import { describeError } from '../lib/errors.js';
import type { TrafficParties } from '../ztunnel/admin/metrics.js';
import type { Outbound } from '../ztunnel/proxy/outbound.js';
import type { ProxyContext } from '../ztunnel/proxy/proxy-context.js';
import { resolveBehindWaypoint } from '../ztunnel/state/upstream.js';
import type { Workload } from '../ztunnel/state/workload.js';
import type { RequestMetrics } from './request-metrics.js';

/** RFC 9110 §7.6.1's connection-specific fields, and the proxy ones Envoy also drops. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
/** What Envoy answers when it cannot connect upstream. */
const UPSTREAM_FAILURE = 'upstream connect error or disconnect/reset before headers. reset reason: connection failure';

/** One client tunnel: where its requests go and who it is from. */
interface Tunnel {
  readonly self: Workload;
  readonly ip: string;
  readonly port: number;
  readonly peerAddr: string;
  readonly parties: TrafficParties;
}

/** The size of a message's head as received: each field's name and value, with `: ` and CRLF. */
function headBytes(raw: readonly string[]): number {
  let n = 0;
  for (let i = 0; i + 1 < raw.length; i += 2) n += raw[i]!.length + raw[i + 1]!.length + 4;
  return n;
}

/** Counts the body bytes a message delivers, beside whoever consumes them. */
function bodyCounter(m: http.IncomingMessage): () => number {
  let n = 0;
  m.on('data', (c: Buffer) => (n += c.length));
  return () => n;
}

/** Calls `then` once, when both messages have ended or closed (a client that goes away ends its request). */
function whenBoth(a: http.IncomingMessage, b: http.IncomingMessage, then: () => void): void {
  let left = 2;
  for (const m of [a, b]) {
    let seen = false;
    const one = (): void => {
      if (seen) return;
      seen = true;
      if (--left === 0) then();
    };
    if (m.readableEnded) one();
    else {
      m.once('end', one);
      m.once('close', one);
    }
  }
}

function forwardable(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
  return out;
}

export class WaypointHttp {
  private readonly server: http.Server;
  private readonly tunnels = new WeakMap<object, Tunnel>();

  constructor(
    private readonly ctx: ProxyContext,
    private readonly outbound: Outbound,
    private readonly sourceIp: string,
    private readonly metrics: RequestMetrics,
  ) {
    // No server timeouts of its own: the tunnel's HBONE keepalive and the client decide how long it lives.
    this.server = http.createServer({ requestTimeout: 0, headersTimeout: 0, keepAliveTimeout: 0 }, (req, res) =>
      this.proxy(req, res),
    );
  }

  /** Serves HTTP/1.1 on a CONNECT tunnel the waypoint accepted for `ip:port`; `done` when the tunnel ends. */
  serve(tunnel: H2Stream, t: Tunnel, done: (error?: Error) => void): void {
    this.tunnels.set(tunnel, t);
    tunnel.once('close', () => done());
    this.server.emit('connection', tunnel);
  }

  private proxy(req: http.IncomingMessage, res: http.ServerResponse): void {
    const t = this.tunnels.get(req.socket);
    if (t === undefined) {
      res.writeHead(500).end();
      return;
    }
    const started = performance.now();
    // Counted once it is piped upstream: a listener any earlier would let the body flow away before then.
    let requestBody = (): number => 0;
    const finish = (
      status: number,
      flags: '-' | 'UF' | 'UH',
      destination: Workload | undefined,
      response: number,
    ): void =>
      this.metrics.record({ ...t.parties, destination }, status, flags, performance.now() - started, {
        request: headBytes(req.rawHeaders) + requestBody(),
        response,
      });
    let dest: ReturnType<typeof resolveBehindWaypoint>;
    try {
      dest = resolveBehindWaypoint(this.ctx.state, t.self, t.ip, t.port);
    } catch (e) {
      this.ctx.log.warn({ src: t.peerAddr, error: describeError(e) }, 'waypoint: no upstream for the request');
      res.writeHead(503, { 'content-type': 'text/plain' }).end('no healthy upstream');
      finish(503, 'UH', undefined, 0);
      return;
    }
    const destination = this.ctx.state.workloadByAddr(t.self.network, dest.ip);
    const headers = forwardable(req.headers);
    headers['x-request-id'] ??= randomUUID();
    void this.outbound.connect(t.peerAddr, this.sourceIp, dest.ip, dest.port).then(
      ({ upstream }) => {
        const out = http.request({
          method: req.method,
          path: req.url,
          headers,
          createConnection: () => upstream,
        });
        out.on('response', (r) => {
          const responseBody = bodyCounter(r);
          res.writeHead(r.statusCode ?? 502, forwardable(r.headers));
          r.pipe(res);
          // Counted once both bodies are done: a server may answer before it has read the whole request.
          whenBoth(r, req, () =>
            finish(r.statusCode ?? 502, '-', destination, headBytes(r.rawHeaders) + responseBody()),
          );
        });
        out.on('error', (e) => {
          this.ctx.log.warn({ src: t.peerAddr, error: describeError(e) }, 'waypoint: upstream request failed');
          if (!res.headersSent) {
            res.writeHead(503, { 'content-type': 'text/plain' }).end(UPSTREAM_FAILURE);
            finish(503, 'UF', destination, UPSTREAM_FAILURE.length);
          } else res.destroy();
        });
        // A client that goes away before its answer is complete takes the upstream request with it.
        res.once('close', () => {
          if (!res.writableFinished) out.destroy();
        });
        requestBody = bodyCounter(req);
        req.pipe(out);
      },
      (e: unknown) => {
        this.ctx.log.warn({ src: t.peerAddr, error: describeError(e) }, 'waypoint: upstream connect failed');
        res.writeHead(503, { 'content-type': 'text/plain' }).end(UPSTREAM_FAILURE);
        finish(503, 'UF', destination, UPSTREAM_FAILURE.length);
      },
    );
  }

  close(): void {
    this.server.close();
  }
}
