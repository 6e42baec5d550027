/**
 * The waypoint's HTTP path, for a destination port whose app protocol is HTTP (HTTP/1.1, `node:http`) or HTTP2/GRPC
 * (HTTP/2 with prior knowledge, `node:http2`'s compatibility API): the requests inside the client's HBONE tunnel are
 * parsed and written, one HBONE stream each, in the same protocol to the destination behind the waypoint, chosen per
 * request (a Service's endpoints are balanced request by request, as Envoy does). Hop-by-hop headers are not
 * forwarded; `x-request-id` is added when the client sent none; HTTP/2 trailers (gRPC's status) are passed on. An
 * attempt is retried as the route's retry policy says (`retry-policy.ts`), the body kept for it (`request-body.ts`),
 * and copies go to the route's mirrors; a request whose upstream cannot be reached is answered 503 with Envoy's
 * text. Each request is counted in Istio's request metrics with `reporter="waypoint"`, gRPC ones with
 * `request_protocol="grpc"` and `grpc_response_status`.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
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
import {
  resolveBehindWaypoint,
  resolveServiceBehindWaypoint,
  type EndpointChooser,
} from '../ztunnel/state/upstream.js';
import { EndpointBalancer, hashKey, NO_LEASE, type AttemptResult, type Lease } from './endpoint-balancer.js';
import { CircuitBreakers } from './circuit-breakers.js';
import type { Workload } from '../ztunnel/state/workload.js';
import { authenticateRequest, type JwtOutcome } from './jwt-authenticator.js';
import type { ExtAuthzClient, ExtAuthzVerdict } from './ext-authz.js';
import { RBAC_DENIED, type Flow, type WaypointAuthorizer } from './waypoint-authorizer.js';
import type { RequestMetrics, ResponseFlag } from './request-metrics.js';
import {
  applyHeaderEdits,
  editPath,
  pickBackend,
  redirectLocation,
  routeRequest,
  type Backend,
  type Mirror,
  type RouteTable,
} from './route-table.js';
import { RequestBody } from './request-body.js';
import {
  UpstreamConnectError,
  UpstreamPool,
  reusedConnectionReset,
  type PooledRequestOptions,
} from './upstream-pool.js';
import { Http2UpstreamPool } from './http2-upstream-pool.js';
import { DEFAULT_RETRY_POLICY, backoffMs, retriable, type AttemptOutcome } from './retry-policy.js';
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
/** Envoy's local reply when a circuit breaker of the backend is full (response flag UO). */
const UPSTREAM_OVERFLOW = 'upstream connect error or disconnect/reset before headers. reset reason: overflow';
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

/** An endpoint a request goes to. */
interface Destination {
  readonly ip: string;
  readonly port: number;
  readonly service: Service | undefined;
}

/**
 * The host a mirrored request carries: `-shadow` added to the name, before any port, as Envoy marks the copies it
 * sends.
 */
export function shadowHost(host: string): string {
  const m = /^(.*?)(:[0-9]+)?$/.exec(host)!;
  return `${m[1]}-shadow${m[2] ?? ''}`;
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

/**
 * Sends a request upstream over HTTP/1.1 to `to`, on a kept-alive connection of `pool` or a new one. `onError` hears
 * whether the connection could not be made, or was a kept-alive one its server had closed (nothing of the request
 * was served in either case).
 */
function sendHttp1(
  pool: UpstreamPool,
  to: { readonly ip: string; readonly port: number },
  peer: string,
  method: string,
  path: string,
  headers: http.OutgoingHttpHeaders,
  onAnswer: (a: UpstreamAnswer) => void,
  onError: (e: Error, unserved: boolean) => void,
  maxRequestsPerConnection: number,
): UpstreamExchange {
  const options: PooledRequestOptions = {
    agent: pool,
    host: to.ip,
    port: to.port,
    peer,
    method,
    path,
    headers,
    maxRequestsPerConnection,
  };
  const out = http.request(options);
  out.on('response', (r) =>
    onAnswer({ status: r.statusCode ?? 502, headers: r.headers, rawHeaders: r.rawHeaders, body: r }),
  );
  out.on('error', (e) => onError(e, e instanceof UpstreamConnectError || reusedConnectionReset(out, e)));
  return { body: out, destroy: () => out.destroy() };
}

/** Sends a request upstream over HTTP/2 (prior knowledge) on `upstream`; its trailers go to `onTrailers`. */
function sendHttp2(
  session: http2.ClientHttp2Session,
  method: string,
  path: string,
  headers: http.OutgoingHttpHeaders,
  onAnswer: (a: UpstreamAnswer) => void,
  onTrailers: (t: http.IncomingHttpHeaders) => void,
  onError: (e: Error) => void,
): UpstreamExchange {
  const { host, ...rest } = headers;
  const out = session.request({
    ':method': method,
    ':path': path,
    ':authority': typeof host === 'string' ? host : '',
    ...rest,
  });
  let answered = false;
  out.on('response', (h) => {
    answered = true;
    const raw = Object.entries(h).flatMap(([k, v]) => [k, String(v)]);
    onAnswer({ status: h[':status'] ?? 502, headers: h, rawHeaders: raw, body: out });
  });
  out.on('trailers', onTrailers);
  out.on('error', onError);
  // A stream reset before its answer (REFUSED_STREAM among others) is an attempt that brought none.
  out.once('close', () => {
    if (!answered)
      onError(
        new Error(
          out.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM
            ? 'upstream refused the stream (REFUSED_STREAM)'
            : `upstream stream closed before its answer (code ${out.rstCode})`,
        ),
      );
  });
  return { body: out, destroy: () => out.close(http2.constants.NGHTTP2_CANCEL) };
}

export class WaypointHttp {
  private readonly server: http.Server;
  private readonly tunnels = new WeakMap<object, Tunnel>();
  private readonly pool: UpstreamPool;
  private readonly h2Pool: Http2UpstreamPool;
  private readonly balancer: EndpointBalancer;
  private readonly breakers = new CircuitBreakers();

  constructor(
    private readonly ctx: ProxyContext,
    private readonly outbound: Outbound,
    private readonly sourceIp: string,
    private readonly metrics: RequestMetrics,
    private readonly rules: WaypointRules,
    private readonly authorizer: WaypointAuthorizer,
    private readonly extAuthz: ExtAuthzClient,
    /** Draws the share a fault applies to, and the endpoints random balancing picks. */
    private readonly random: () => number = Math.random,
  ) {
    this.balancer = new EndpointBalancer(random);
    const open = async (peer: string, ip: string, port: number): Promise<Duplex> =>
      (await outbound.connect(peer, sourceIp, ip, port)).upstream;
    this.pool = new UpstreamPool(open);
    this.h2Pool = new Http2UpstreamPool(open);
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
   * Serves HTTP/2 on a connection: a CONNECT tunnel whose port's app protocol is HTTP2 or GRPC (prior knowledge), or
   * an ingress gateway's connection (h2c with prior knowledge, or TLS that chose h2 by ALPN). A server of its own,
   * since node's HTTP/2 compatibility API hides which connection a request came on.
   */
  serveHttp2(conn: Duplex, t: Tunnel, done: (error?: Error) => void = () => undefined): void {
    const server = http2.createServer({}, (req, res) => this.proxy(req, res, t, true));
    conn.once('close', () => {
      server.close();
      done();
    });
    server.emit('connection', conn);
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
    const a = route?.action;
    if (a?.t === 'direct') {
      answer(a.status, '-');
      return;
    }
    if (a?.t === 'redirect') {
      answer(a.status, '-', '', { location: redirectLocation(routed, a, route!, t.port) });
      return;
    }
    /**
     * Where the request goes: an endpoint of the route's backend, picked as its traffic policy says and leased to the
     * next attempt (`lease`), or of the Service the tunnel is for.
     */
    let resolve: () => Destination;
    let lease: Lease = NO_LEASE;
    let setCookie: string | undefined;
    let upstreamH2 = h2;
    /** The backend whose circuit breakers the request goes through. */
    let breaker: Backend | undefined;
    // A request no route sends elsewhere goes to the Service it is for, under that Service's traffic policy if any.
    const b = a?.t === 'forward' ? pickBackend(a) : this.serviceBackend(t);
    if (a?.t === 'forward' && (b === undefined || b.hostname === '')) {
      answer(500, '-');
      return;
    }
    if (b !== undefined) {
      breaker = b;
      const hash = hashKey(b.policy, { headers: req.headers, url: jwt.url, sourceIp: t.sourceIp });
      setCookie = hash.setCookie;
      /** The endpoints this request's attempts went to: a retry goes elsewhere while it can. */
      const tried = new Set<string>();
      resolve = () => {
        const p = this.balancer.pick(b.cluster, b.policy, hash.key, tried);
        const d = this.resolveBackend(b, t, p.chooser);
        lease = p.lease();
        if (lease.endpoint !== undefined) tried.add(lease.endpoint);
        return d;
      };
      upstreamH2 = this.upstreamHttp2(t, h2, b);
    } else resolve = () => resolveBehindWaypoint(this.ctx.state, t.self, t.ip, t.port);
    let dest: Destination;
    try {
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
    const method = req.method ?? 'GET';
    const path = route?.rewrite === undefined ? jwt.url : editPath(jwt.url, route.rewrite.path, route);
    const body = new RequestBody(req);
    requestBody = () => body.bytes;
    if (route !== undefined)
      for (const m of route.mirrors)
        this.mirror(m, t, method, path, headers, body, res, this.upstreamHttp2(t, h2, m.backend));
    const policy = route?.retry ?? DEFAULT_RETRY_POLICY;
    /** A retry's place among the backend's retries in flight, taken by the attempt it schedules. */
    let retryToken: { done(): void } | undefined;
    /** The attempt in flight, and how many were made. */
    let exchange: UpstreamExchange | undefined;
    let attempts = 0;
    /** The client has its answer (or is gone): no attempt's outcome counts any more. */
    let done = false;
    const timer =
      route?.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            if (done || res.headersSent) return;
            done = true;
            exchange?.destroy();
            answer(504, 'UT', UPSTREAM_TIMEOUT);
          }, route.timeoutMs);
    /** The client went away before its answer was complete: what that does upstream is not the endpoint's fault. */
    let clientGone = false;
    // A client that goes away before its answer is complete takes the upstream request with it.
    res.once('close', () => {
      clearTimeout(timer);
      done = true;
      // An endpoint picked for an attempt that never ran (it waited on a circuit breaker, or for a retry).
      lease.end(undefined);
      if (!res.writableFinished) {
        clientGone = true;
        exchange?.destroy();
      }
    });
    /** Schedules another attempt if the policy allows one after `outcome`. */
    const retrying = (outcome: AttemptOutcome): boolean => {
      if (done || attempts > policy.attempts || !body.replayable || !retriable(policy, outcome)) return false;
      if (breaker !== undefined) {
        retryToken = this.breakers.retry(breaker.cluster, breaker.limits);
        // Past the backend's maxRetries: the failure goes back as it is.
        if (retryToken === undefined) return false;
      }
      try {
        dest = resolve();
      } catch {
        // No other endpoint now: the same one is tried again.
      }
      this.ctx.log.debug({ src: t.peerAddr, outcome: outcome.t, attempt: attempts }, 'waypoint: retrying upstream');
      setTimeout(attempt, backoffMs(attempts, this.random));
      return true;
    };
    /** Answers the client for an attempt that brought no response and will not be retried. */
    const failed = (outcome: Exclude<AttemptOutcome, { t: 'response' }>, e?: unknown): void => {
      if (done || retrying(outcome)) return;
      done = true;
      clearTimeout(timer);
      this.ctx.log.warn({ src: t.peerAddr, error: describeError(e), attempts }, 'waypoint: upstream request failed');
      if (outcome.t === 'per-try-timeout') answer(504, 'UT', UPSTREAM_TIMEOUT);
      else answer(503, 'UF', UPSTREAM_FAILURE);
    };
    /** Passes the upstream's answer on to the client. */
    const deliver = (r: UpstreamAnswer, grpcStatusHeader: string | undefined, from: UpstreamExchange): void => {
      done = true;
      clearTimeout(timer);
      // An answer complete before the request is ends the upstream exchange, as Envoy resets it: the rest of the
      // client's body is read and dropped, and the connection is not kept for another request.
      r.body.once('end', () => {
        if (!body.complete) from.destroy();
      });
      const responseBody = bodyCounter(r.body);
      grpcStatus = grpcStatusHeader ?? '';
      let back = forwardable(r.headers);
      if (extAuthz !== undefined && extAuthz.downstream.length > 0)
        back = applyHeaderEdits(back, { set: [], add: extAuthz.downstream, remove: [] });
      if (route?.responseHeaders !== undefined) back = applyHeaderEdits(back, route.responseHeaders);
      if (setCookie !== undefined)
        back = applyHeaderEdits(back, { set: [], add: [['set-cookie', setCookie]], remove: [] });
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
    const attempt = (): void => {
      const held = lease;
      const retry = retryToken;
      lease = NO_LEASE;
      retryToken = undefined;
      /** The attempt's outcome, for its endpoint's outlier detection and the backend's retries in flight. */
      const settle = (result: AttemptResult): void => {
        held.end(result);
        retry?.done();
      };
      if (done) {
        settle(undefined);
        return;
      }
      attempts++;
      const to = dest;
      upstreamHost = formatHostPort(to.ip, to.port);
      const destination = this.ctx.state.workloadByAddr(t.self.network, to.ip);
      parties = { ...parties, destination, destinationService: to.service ?? parties.destinationService };
      /** Whether this attempt's answer went to the client, or it was given up (retried or failed). */
      let state: 'pending' | 'delivered' | 'abandoned' = 'pending';
      let perTry: NodeJS.Timeout | undefined;
      let out: UpstreamExchange | undefined;
      const onAnswer = (r: UpstreamAnswer): void => {
        clearTimeout(perTry);
        settle(r.status);
        if (state !== 'pending' || done) {
          r.body.resume();
          return;
        }
        const g = r.headers['grpc-status'];
        const grpcStatusHeader = typeof g === 'string' ? g : undefined;
        if (retrying({ t: 'response', status: r.status, grpcStatus: grpcStatusHeader })) {
          state = 'abandoned';
          r.body.resume();
          out?.destroy();
          return;
        }
        state = 'delivered';
        deliver(r, grpcStatusHeader, out!);
      };
      /** `unserved`: the connection could not be made, or was a kept-alive one its server had closed. */
      const onError = (e: Error, unserved = false): void => {
        clearTimeout(perTry);
        settle(clientGone ? undefined : 'failure');
        if (state === 'delivered') {
          // The answer broke off after its head went to the client: so does the client's.
          if (!res.writableFinished) res.destroy();
          return;
        }
        if (state === 'abandoned') return;
        state = 'abandoned';
        this.ctx.log.debug({ src: t.peerAddr, error: describeError(e), attempt: attempts }, 'waypoint: attempt failed');
        failed(
          unserved ? { t: 'connect-failure' } : { t: 'reset', refusedStream: /REFUSED_STREAM/.test(e.message) },
          e,
        );
      };
      const started = (exchange_: UpstreamExchange): void => {
        out = exchange = exchange_;
        if (policy.perTryTimeoutMs !== undefined)
          perTry = setTimeout(() => {
            if (state !== 'pending') return;
            state = 'abandoned';
            settle('failure');
            exchange_.destroy();
            failed({ t: 'per-try-timeout' });
          }, policy.perTryTimeoutMs);
        body.sendTo(exchange_.body);
      };
      if (!upstreamH2) {
        const perConnection = breaker?.limits.maxRequestsPerConnection ?? 0;
        started(sendHttp1(this.pool, to, t.peerAddr, method, path, headers, onAnswer, onError, perConnection));
        return;
      }
      void this.h2Pool.session(t.peerAddr, to.ip, to.port).then(
        (session) => {
          if (done) {
            settle(undefined);
            return;
          }
          let exchange_: UpstreamExchange;
          try {
            exchange_ = sendHttp2(
              session,
              method,
              path,
              headers,
              onAnswer,
              (tr) => this.trailers(res, tr, (g) => (grpcStatus = g)),
              onError,
            );
          } catch (e) {
            // A session that closed as it was handed out: nothing of the request left.
            onError(e instanceof Error ? e : new Error(String(e)), true);
            return;
          }
          started(exchange_);
        },
        (e: unknown) => onError(e instanceof Error ? e : new Error(String(e)), true),
      );
    };
    if (breaker === undefined) {
      attempt();
      return;
    }
    const admitted = this.breakers.admit(breaker.cluster, breaker.limits, upstreamH2, attempt);
    if (admitted === undefined) {
      done = true;
      clearTimeout(timer);
      lease.end(undefined);
      this.ctx.log.debug({ src: t.peerAddr, cluster: breaker.cluster }, 'waypoint: circuit breaker overflow');
      answer(503, 'UO', UPSTREAM_OVERFLOW, { 'x-envoy-overloaded': 'true' });
      return;
    }
    res.once('close', () => admitted.release());
  }

  /** The backend of the Service the tunnel is for, when istiod sent that Service port a traffic policy. */
  private serviceBackend(t: Tunnel): Backend | undefined {
    if (t.virtualHost !== undefined) return undefined;
    const svc = this.ctx.state.serviceByVip(t.self.network, t.ip, t.self.namespace);
    return svc === undefined ? undefined : this.rules.serviceBackend(svc.namespace, svc.hostname, t.port);
  }

  /**
   * Whether a request goes to `b` in HTTP/2: at a waypoint, as the client spoke (the port's app protocol, `h2`); at
   * a gateway, as the backend's Service port declares (HTTP2 or GRPC), whatever the client outside spoke.
   */
  private upstreamHttp2(t: Tunnel, h2: boolean, b: Backend): boolean {
    if (t.virtualHost === undefined) return h2;
    const p = this.ctx.state.serviceByKey(`${b.namespace}/${b.hostname}`)?.appProtocols?.[String(b.port)];
    return p === 'HTTP2' || p === 'GRPC';
  }

  /**
   * An endpoint of a route's backend (of its subset, when it names one); or, for a backend an ingress gateway reaches
   * through its waypoint, the Service's own address, which the outbound path sends to the waypoint as any client's.
   */
  private resolveBackend(b: Backend, t: Tunnel, chooser?: EndpointChooser): Destination {
    const svc = this.ctx.state.serviceByKey(`${b.namespace}/${b.hostname}`);
    if (svc === undefined)
      throw new MeshError('ZT_ERR_NO_HEALTHY_UPSTREAM', `route backend ${b.namespace}/${b.hostname} is not known yet`);
    if (b.useWaypoint && svc.waypoint !== undefined) {
      const family = net.isIPv6(t.ip) ? 6 : 4;
      const vip = svc.vips.map((v) => v.slice(v.indexOf('/') + 1)).find((ip) => net.isIP(ip) === family);
      if (vip !== undefined) return { ip: vip, port: b.port, service: svc };
    }
    return resolveServiceBehindWaypoint(this.ctx.state, t.self, svc, b.port, t.ip, b.endpoints, this.random, chooser);
  }

  /**
   * Sends a copy of the request to a mirror, as Envoy's request mirroring does: for its share of the requests, with
   * `-shadow` added to the host, its answer read and dropped, its failures logged at debug level and never felt by
   * the client.
   */
  private mirror(
    m: Mirror,
    t: Tunnel,
    method: string,
    path: string,
    headers: http.OutgoingHttpHeaders,
    body: RequestBody,
    res: ClientResponse,
    h2: boolean,
  ): void {
    if (this.random() * 100 >= m.percentage) return;
    const skip = (e: unknown): void =>
      this.ctx.log.debug(
        { src: t.peerAddr, mirror: `${m.backend.namespace}/${m.backend.hostname}`, error: describeError(e) },
        'waypoint: request not mirrored',
      );
    let to: Destination;
    try {
      to = this.resolveBackend(m.backend, t);
    } catch (e) {
      skip(e);
      return;
    }
    const host = typeof headers['host'] === 'string' ? headers['host'] : '';
    const shadow = { ...headers, host: shadowHost(host) };
    const drop = (r: UpstreamAnswer): void => void r.body.resume();
    const send = (out: UpstreamExchange): void => {
      if (!body.mirrorTo(out.body)) {
        out.destroy();
        return;
      }
      // A request whose body will never be read (the client's exchange ended first) is not left waiting.
      if (res.writableFinished || res.destroyed) {
        if (!out.body.writableEnded) out.destroy();
      } else
        res.once('close', () => {
          if (!out.body.writableEnded) out.destroy();
        });
    };
    if (!h2)
      send(
        sendHttp1(
          this.pool,
          to,
          t.peerAddr,
          method,
          path,
          shadow,
          drop,
          skip,
          m.backend.limits.maxRequestsPerConnection,
        ),
      );
    else
      void this.h2Pool
        .session(t.peerAddr, to.ip, to.port)
        .then((session) => send(sendHttp2(session, method, path, shadow, drop, () => undefined, skip)))
        .catch(skip);
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
    this.pool.destroy();
    this.h2Pool.destroy();
  }
}
