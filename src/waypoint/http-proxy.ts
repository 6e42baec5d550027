/**
 * The waypoint's HTTP path, for a destination port whose app protocol is HTTP (HTTP/1.1, `node:http`) or HTTP2/GRPC
 * (HTTP/2 with prior knowledge, `node:http2`'s compatibility API): the requests inside the client's HBONE tunnel are
 * parsed and written, one HBONE stream each, in the same protocol to the destination behind the waypoint, chosen per
 * request (a Service's endpoints are balanced request by request, as Envoy does). Hop-by-hop headers are not
 * forwarded; `x-request-id` is added when the client sent none; HTTP/2 trailers (gRPC's status) are passed on. A
 * request whose upstream cannot be reached is answered 503 with Envoy's text. Each request is counted in Istio's
 * request metrics with `reporter="waypoint"`, gRPC ones with `request_protocol="grpc"` and `grpc_response_status`.
 */
import http from 'node:http';
import http2 from 'node:http2';
import type { Duplex, Readable, Writable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { H2Stream } from '../h2/h2-stream.js';
import { describeError, MeshError } from '../lib/errors.js';
import { formatHostPort } from '../lib/ip.js';
import { identityToString } from '../lib/spiffe.js';
import type { Outbound } from '../ztunnel/proxy/outbound.js';
import type { ProxyContext } from '../ztunnel/proxy/proxy-context.js';
import type { Service } from '../ztunnel/state/service.js';
import { resolveBehindWaypoint, resolveServiceBehindWaypoint } from '../ztunnel/state/upstream.js';
import type { Workload } from '../ztunnel/state/workload.js';
import { authenticateRequest, type JwtOutcome } from './jwt-authenticator.js';
import type { ExtAuthzClient, ExtAuthzVerdict } from './ext-authz.js';
import { RBAC_DENIED, type Flow, type WaypointAuthorizer } from './waypoint-authorizer.js';
import type { RequestMetrics, ResponseFlag } from './request-metrics.js';
import {
  DEFAULT_CONNECT_RETRIES,
  applyHeaderEdits,
  editPath,
  pickBackend,
  redirectLocation,
  routeRequest,
  type RouteTable,
} from './route-table.js';
import type { WaypointRules } from './waypoint-rules.js';

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
/** What Envoy answers when it cannot connect upstream, and when the route's timeout passes. */
const UPSTREAM_FAILURE = 'upstream connect error or disconnect/reset before headers. reset reason: connection failure';
const UPSTREAM_TIMEOUT = 'upstream request timeout';
/** What Envoy's fault filter answers an aborted request with. */
const FAULT_ABORT = 'fault filter abort';
/**
 * The gRPC status a local reply's HTTP status stands for, as Envoy maps them (envoy
 * `source/common/grpc/status.cc` `httpToGrpcStatus`).
 */
export function grpcStatusOf(http: number): number {
  switch (http) {
    case 400:
      return 13; // INTERNAL
    case 401:
      return 16; // UNAUTHENTICATED
    case 403:
      return 7; // PERMISSION_DENIED
    case 404:
      return 12; // UNIMPLEMENTED
    case 429:
    case 502:
    case 503:
    case 504:
      return 14; // UNAVAILABLE
    default:
      return 2; // UNKNOWN
  }
}

/** The fields of a gRPC status, which belong in trailers. */
const GRPC_STATUS_FIELDS = new Set(['grpc-status', 'grpc-message', 'grpc-status-details-bin']);

/** One client tunnel (or, at an ingress gateway, connection): where its requests go and who it is from. */
export interface Tunnel extends Flow {
  /** The proxy's own workload. */
  readonly self: Workload;
  /**
   * An ingress gateway's routing: the route table of the virtual host a request's Host selects (none: 404). A
   * waypoint routes by the Service the tunnel is for instead.
   */
  readonly virtualHost?: (host: string) => RouteTable | undefined;
}

/** A request as `node:http` and `node:http2`'s compatibility API both give it. */
export interface ClientRequest extends Readable {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  readonly headers: http.IncomingHttpHeaders;
  readonly rawHeaders: string[];
  readonly httpVersion: string;
}
/** The response side both give. */
interface ClientResponse extends Writable {
  writeHead(status: number, headers?: http.OutgoingHttpHeaders): unknown;
  readonly headersSent: boolean;
}

/** What the upstream answered: its head, its body, and (HTTP/2) a way to hear its trailers. */
interface UpstreamAnswer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly rawHeaders: readonly string[];
  readonly body: Readable;
}
/** One request sent upstream: its body is written to `body`. */
interface UpstreamExchange {
  readonly body: Writable;
  destroy(): void;
}

/** The size of a message's head as received: each field's name and value, with `: ` and CRLF. */
function headBytes(raw: readonly string[]): number {
  let n = 0;
  for (let i = 0; i + 1 < raw.length; i += 2) n += raw[i]!.length + raw[i + 1]!.length + 4;
  return n;
}

/** Counts the body bytes a message delivers, beside whoever consumes them. */
function bodyCounter(m: Readable): () => number {
  let n = 0;
  m.on('data', (c: Buffer) => (n += c.length));
  return () => n;
}

/** Calls `then` once, when both messages have ended or closed (a client that goes away ends its request). */
function whenBoth(a: Readable, b: Readable, then: () => void): void {
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

/** The headers a proxy passes on: no hop-by-hop fields, no HTTP/2 pseudo-headers (`:authority` becomes `host`). */
function forwardable(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers))
    if (v !== undefined && !HOP_BY_HOP.has(k) && !k.startsWith(':')) out[k] = v;
  // The one TE an HTTP/2 peer may send, which gRPC servers require.
  if (headers['te'] === 'trailers') out['te'] = 'trailers';
  const authority = headers[':authority'];
  if (typeof authority === 'string' && out['host'] === undefined) out['host'] = authority;
  return out;
}

/** Sends a request upstream over HTTP/1.1 on `upstream`. */
function sendHttp1(
  upstream: Readable & Writable,
  method: string,
  path: string,
  headers: http.OutgoingHttpHeaders,
  onAnswer: (a: UpstreamAnswer) => void,
  onError: (e: Error) => void,
): UpstreamExchange {
  const out = http.request({ method, path, headers, createConnection: () => upstream as never });
  out.on('response', (r) =>
    onAnswer({ status: r.statusCode ?? 502, headers: r.headers, rawHeaders: r.rawHeaders, body: r }),
  );
  out.on('error', onError);
  return { body: out, destroy: () => out.destroy() };
}

/** Sends a request upstream over HTTP/2 (prior knowledge) on `upstream`; its trailers go to `onTrailers`. */
function sendHttp2(
  upstream: Readable & Writable,
  method: string,
  path: string,
  headers: http.OutgoingHttpHeaders,
  onAnswer: (a: UpstreamAnswer) => void,
  onTrailers: (t: http.IncomingHttpHeaders) => void,
  onError: (e: Error) => void,
): UpstreamExchange {
  const { host, ...rest } = headers;
  const session = http2.connect('http://upstream', { createConnection: () => upstream as never });
  session.on('error', onError);
  const out = session.request({
    ':method': method,
    ':path': path,
    ':authority': typeof host === 'string' ? host : '',
    ...rest,
  });
  out.on('response', (h) => {
    const raw = Object.entries(h).flatMap(([k, v]) => [k, String(v)]);
    onAnswer({ status: h[':status'] ?? 502, headers: h, rawHeaders: raw, body: out });
  });
  out.on('trailers', onTrailers);
  out.on('error', onError);
  out.on('close', () => session.close());
  return { body: out, destroy: () => session.destroy() };
}

export class WaypointHttp {
  private readonly server: http.Server;
  private readonly tunnels = new WeakMap<object, Tunnel>();

  constructor(
    private readonly ctx: ProxyContext,
    private readonly outbound: Outbound,
    private readonly sourceIp: string,
    private readonly metrics: RequestMetrics,
    private readonly rules: WaypointRules,
    private readonly authorizer: WaypointAuthorizer,
    private readonly extAuthz: ExtAuthzClient,
    /** Draws the share a fault applies to. */
    private readonly random: () => number = Math.random,
  ) {
    // No server timeouts of its own: the tunnel's HBONE keepalive and the client decide how long it lives.
    this.server = http.createServer({ requestTimeout: 0, headersTimeout: 0, keepAliveTimeout: 0 }, (req, res) =>
      this.proxy(req, res, this.tunnels.get(req.socket), false),
    );
  }

  /** Serves HTTP/1.1 on a CONNECT tunnel the waypoint accepted for `ip:port`; `done` when the tunnel ends. */
  serve(tunnel: H2Stream, t: Tunnel, done: (error?: Error) => void): void {
    this.tunnels.set(tunnel, t);
    tunnel.once('close', () => done());
    this.server.emit('connection', tunnel);
  }

  /** Serves HTTP/1.1 on a connection an ingress gateway's listener accepted (plain, or TLS it terminated). */
  serveConnection(socket: Duplex, t: Tunnel): void {
    this.tunnels.set(socket, t);
    this.server.emit('connection', socket);
  }

  /**
   * Serves HTTP/2 with prior knowledge on a CONNECT tunnel (a port whose app protocol is HTTP2 or GRPC): a server of
   * its own, since node's HTTP/2 compatibility API hides which tunnel a request came on.
   */
  serveHttp2(tunnel: H2Stream, t: Tunnel, done: (error?: Error) => void): void {
    const server = http2.createServer({}, (req, res) => this.proxy(req, res, t, true));
    tunnel.once('close', () => {
      server.close();
      done();
    });
    server.emit('connection', tunnel);
  }

  private proxy(req: ClientRequest, res: ClientResponse, t: Tunnel | undefined, h2: boolean): void {
    if (t === undefined) {
      res.writeHead(500);
      res.end();
      return;
    }
    const svc = t.parties.destinationService;
    // Given before any filter runs, as Envoy does, so that an ext_authz provider sees the id the upstream will.
    req.headers['x-request-id'] ??= randomUUID();
    void authenticateRequest(
      this.rules.jwtPolicies,
      svc === undefined ? undefined : `${svc.namespace}/${svc.hostname}`,
      {
        url: req.url ?? '/',
        headers: req.headers,
      },
    )
      .then((jwt) => this.forward(req, res, t, jwt, h2))
      .catch((e: unknown) => {
        this.ctx.log.error({ src: t.peerAddr, error: describeError(e) }, 'waypoint: request failed');
        if (res.headersSent) res.destroy();
        else {
          res.writeHead(500);
          res.end();
        }
      });
  }

  /** Authorizes, routes and forwards one request whose token (if any) was checked. */
  private async forward(
    req: ClientRequest,
    res: ClientResponse,
    t: Tunnel,
    jwt: JwtOutcome,
    h2: boolean,
  ): Promise<void> {
    const started = performance.now();
    // Counted once it is piped upstream: a listener any earlier would let the body flow away before then.
    let requestBody = (): number => 0;
    let parties = t.parties;
    const grpc = (req.headers['content-type'] ?? '').startsWith('application/grpc');
    let grpcStatus = '';
    /** Where the request went (`ip:port`) and by which route, for the access log. */
    let upstreamHost = '-';
    let routeName = '-';
    const finish = (status: number, flags: ResponseFlag, response: number): void => {
      const durationMs = performance.now() - started;
      const bytes = { request: headBytes(req.rawHeaders) + requestBody(), response };
      this.metrics.record(parties, status, flags, durationMs, bytes, grpc ? { status: grpcStatus } : undefined);
      if (this.rules.accessLog)
        // Envoy's default access log fields, as Istio's proxies write them when meshConfig.accessLogFile is set.
        this.ctx.connections.access.info(
          {
            method: req.method,
            path: req.url,
            protocol: `HTTP/${req.httpVersion}`,
            response_code: status,
            response_flags: flags,
            bytes_received: bytes.request,
            bytes_sent: bytes.response,
            duration: Math.round(durationMs),
            upstream_host: upstreamHost,
            x_request_id: req.headers['x-request-id'],
            authority: req.headers[':authority'] ?? req.headers.host,
            downstream_peer: t.peerAddr,
            route_name: routeName,
            ...(grpc ? { grpc_status: grpcStatus } : {}),
          },
          'request complete',
        );
    };
    /** Answers the request from the waypoint itself. */
    const answer = (status: number, flags: ResponseFlag, body = '', headers: http.OutgoingHttpHeaders = {}): void => {
      if (grpc && res instanceof http2.Http2ServerResponse) {
        // A gRPC client is answered in gRPC: 200, with the status Envoy maps the HTTP one to, in trailers.
        grpcStatus = String(grpcStatusOf(status));
        res.addTrailers({ 'grpc-status': grpcStatus, 'grpc-message': encodeURIComponent(body) });
        res.writeHead(200, { ...headers, 'content-type': 'application/grpc' });
        res.end();
        finish(200, flags, 0);
        return;
      }
      res.writeHead(status, body === '' ? headers : { 'content-type': 'text/plain', ...headers });
      res.end(body);
      finish(status, flags, Buffer.byteLength(body));
    };
    if (!jwt.ok) {
      this.ctx.log.info(
        { src: t.peerAddr, method: req.method, path: req.url, reason: jwt.reason },
        'waypoint: request refused by RequestAuthentication',
      );
      answer(401, '-', jwt.body);
      return;
    }
    const authz = this.authorizer.request(req, t, jwt.jwt);
    let extAuthz: Extract<ExtAuthzVerdict, { allowed: true }> | undefined;
    for (const name of authz.providers) {
      const provider = this.rules.extAuthzProvider(name);
      const verdict =
        provider === undefined
          ? ({ allowed: false, status: 403, headers: [], body: '', reason: `no ext_authz provider ${name}` } as const)
          : await this.extAuthz.check(
              provider,
              req,
              t.self,
              t.peerAddr,
              t.parties.sourceIdentity === undefined ? undefined : identityToString(t.parties.sourceIdentity),
            );
      if (!verdict.allowed) {
        this.authorizer.refuse(t, { method: req.method, path: req.url }, verdict.reason);
        answer(verdict.status, 'UAEX', verdict.body, Object.fromEntries(verdict.headers));
        return;
      }
      extAuthz = verdict;
    }
    if (authz.refused !== undefined) {
      answer(403, '-', RBAC_DENIED);
      return;
    }
    const table = this.routeTable(req, t);
    const routed = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers };
    const route = table === undefined ? undefined : routeRequest(table, routed);
    routeName = route?.name ?? '-';
    if ((table !== undefined || t.virtualHost !== undefined) && route === undefined) {
      answer(404, 'NR');
      return;
    }
    // Envoy's fault filter, before the router: a share of the requests delayed (DI), a share answered (FI).
    const fault = route?.fault;
    let faultFlag: ResponseFlag = '-';
    if (fault?.delay !== undefined && this.random() * 100 < fault.delay.percentage) {
      faultFlag = 'DI';
      await new Promise((resolve) => setTimeout(resolve, fault.delay!.ms));
      if (res.destroyed) return;
    }
    if (fault?.abort !== undefined && this.random() * 100 < fault.abort.percentage) {
      answer(fault.abort.status, 'FI', FAULT_ABORT);
      return;
    }
    let dest: { ip: string; port: number; service: Service | undefined };
    /** Where the request goes: an endpoint of the route's backend, or of the Service the tunnel is for. */
    let resolve: () => typeof dest;
    try {
      const a = route?.action;
      if (a?.t === 'direct') {
        answer(a.status, '-');
        return;
      }
      if (a?.t === 'redirect') {
        answer(a.status, '-', '', { location: redirectLocation(routed, a, route!, t.port) });
        return;
      }
      if (a?.t === 'forward') {
        const b = pickBackend(a);
        if (b === undefined || b.hostname === '') {
          answer(500, '-');
          return;
        }
        const backend = this.ctx.state.serviceByKey(`${b.namespace}/${b.hostname}`);
        if (backend === undefined)
          throw new MeshError(
            'ZT_ERR_NO_HEALTHY_UPSTREAM',
            `route backend ${b.namespace}/${b.hostname} is not known yet`,
          );
        resolve = () => resolveServiceBehindWaypoint(this.ctx.state, t.self, backend, b.port, t.ip);
      } else resolve = () => resolveBehindWaypoint(this.ctx.state, t.self, t.ip, t.port);
      dest = resolve();
    } catch (e) {
      this.ctx.log.warn({ src: t.peerAddr, error: describeError(e) }, 'waypoint: no upstream for the request');
      answer(503, 'UH', 'no healthy upstream');
      return;
    }
    let headers = forwardable(req.headers);
    if (jwt.headers !== undefined) headers = applyHeaderEdits(headers, jwt.headers);
    if (extAuthz !== undefined) headers = applyHeaderEdits(headers, { set: extAuthz.upstream, add: [], remove: [] });
    if (route?.requestHeaders !== undefined) headers = applyHeaderEdits(headers, route.requestHeaders);
    if (route?.rewrite !== undefined && route.rewrite.hostname !== '') headers['host'] = route.rewrite.hostname;
    const path = route?.rewrite === undefined ? jwt.url : editPath(jwt.url, route.rewrite.path, route);
    let timer: NodeJS.Timeout | undefined;
    // A connection that cannot be made is tried again on another endpoint, as Envoy's retry policy does: nothing of
    // the request has left yet, so any request may be retried.
    const retries = route?.connectRetries ?? DEFAULT_CONNECT_RETRIES;
    const connect = async (): Promise<Awaited<ReturnType<Outbound['connect']>>> => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await this.outbound.connect(t.peerAddr, this.sourceIp, dest.ip, dest.port);
        } catch (e) {
          if (attempt >= retries || res.destroyed) throw e;
          this.ctx.log.debug({ src: t.peerAddr, error: describeError(e), attempt }, 'waypoint: retrying upstream');
          try {
            dest = resolve();
          } catch {
            throw e;
          }
        }
      }
    };
    void connect().then(
      ({ upstream }) => {
        upstreamHost = formatHostPort(dest.ip, dest.port);
        const destination = this.ctx.state.workloadByAddr(t.self.network, dest.ip);
        parties = { ...parties, destination, destinationService: dest.service ?? parties.destinationService };
        const onAnswer = (r: UpstreamAnswer): void => {
          clearTimeout(timer);
          const responseBody = bodyCounter(r.body);
          grpcStatus = typeof r.headers['grpc-status'] === 'string' ? r.headers['grpc-status'] : '';
          let back = forwardable(r.headers);
          if (extAuthz !== undefined && extAuthz.downstream.length > 0)
            back = applyHeaderEdits(back, { set: [], add: extAuthz.downstream, remove: [] });
          if (route?.responseHeaders !== undefined) back = applyHeaderEdits(back, route.responseHeaders);
          if (grpcStatus !== '' && res instanceof http2.Http2ServerResponse) {
            // A trailers-only gRPC answer: its status goes on in trailers, after the head and the (empty) body.
            const status = Object.entries(back).filter(([k]) => GRPC_STATUS_FIELDS.has(k));
            res.addTrailers(Object.fromEntries(status));
            back = Object.fromEntries(Object.entries(back).filter(([k]) => !GRPC_STATUS_FIELDS.has(k)));
          }
          res.writeHead(r.status, back);
          r.body.pipe(res);
          // Counted once both bodies are done: a server may answer before it has read the whole request.
          whenBoth(r.body, req, () => finish(r.status, faultFlag, headBytes(r.rawHeaders) + responseBody()));
        };
        const onError = (e: Error): void => {
          clearTimeout(timer);
          if (res.headersSent) {
            if (!res.writableFinished) res.destroy();
            return;
          }
          this.ctx.log.warn({ src: t.peerAddr, error: describeError(e) }, 'waypoint: upstream request failed');
          answer(503, 'UF', UPSTREAM_FAILURE);
        };
        const method = req.method ?? 'GET';
        const out = h2
          ? sendHttp2(
              upstream,
              method,
              path,
              headers,
              onAnswer,
              (tr) => this.trailers(res, tr, (g) => (grpcStatus = g)),
              onError,
            )
          : sendHttp1(upstream, method, path, headers, onAnswer, onError);
        if (route?.timeoutMs !== undefined)
          timer = setTimeout(() => {
            if (res.headersSent) return;
            out.destroy();
            answer(504, 'UT', UPSTREAM_TIMEOUT);
          }, route.timeoutMs);
        // A client that goes away before its answer is complete takes the upstream request with it.
        res.once('close', () => {
          clearTimeout(timer);
          if (!res.writableFinished) out.destroy();
        });
        requestBody = bodyCounter(req);
        req.pipe(out.body);
      },
      (e: unknown) => {
        this.ctx.log.warn({ src: t.peerAddr, error: describeError(e) }, 'waypoint: upstream connect failed');
        answer(503, 'UF', UPSTREAM_FAILURE);
      },
    );
  }

  /** The routes a request is matched against: its virtual host's at a gateway, its Service's at a waypoint. */
  private routeTable(req: ClientRequest, t: Tunnel): RouteTable | undefined {
    if (t.virtualHost !== undefined) {
      const host = req.headers[':authority'] ?? req.headers.host;
      return t.virtualHost(typeof host === 'string' ? host : '');
    }
    const svc = t.parties.destinationService;
    return svc === undefined ? undefined : this.rules.routesFor(svc.namespace, svc.hostname, t.port);
  }

  /** Passes an HTTP/2 upstream's trailers on to the client (gRPC's status among them). */
  private trailers(res: ClientResponse, tr: http.IncomingHttpHeaders, grpc: (status: string) => void): void {
    const status = tr['grpc-status'];
    if (typeof status === 'string') grpc(status);
    if (res instanceof http2.Http2ServerResponse) res.addTrailers(forwardable(tr));
  }

  close(): void {
    this.server.close();
  }
}
