/**
 * An ingress gateway's listeners (`amesh proxy router`, Istio's `pilot-agent proxy router` for the `istio` class):
 * one server per port istiod's listeners name, on every address of the pod, made and closed as pushes change them.
 * - HTTP: requests are routed by Host to the virtual hosts of every HTTP listener of the port; HTTP/1.1, or HTTP/2
 *   with prior knowledge (h2c), told apart by the connection's first bytes.
 * - HTTPS: TLS is terminated with the certificates istiod serves over SDS (`gateway-credentials.ts`), chosen by SNI
 *   (`listenerForSni`); a client without SNI gets the listener without a hostname, if there is one. A listener that
 *   verifies clients (MUTUAL, OPTIONAL_MUTUAL) checks their certificates (`client-certificate.ts`). ALPN offers h2 and
 *   http/1.1, as Istio's gateways do. The requests inside are routed by the virtual hosts of that listener
 *   only, as Envoy's per-server routes are.
 * - TLS: the ClientHello's SNI (`client-hello.ts`, read without terminating TLS, as Envoy's tls_inspector does)
 *   picks the listener and its virtual host, whose route's backends take the connection as it is; a listener that
 *   terminates TLS hands the connection (with the bytes read) to the port's TLS server, which terminates it as
 *   HTTPS does, and the bytes inside are relayed.
 * - TCP: the route of the port's listener takes every connection.
 * Each request then goes through the same path a waypoint's does (`http-proxy.ts`): RequestAuthentication,
 * AuthorizationPolicies that target the Gateway, then the route, and into the mesh over HBONE with the gateway's
 * identity, in HTTP/2 when the backend's Service port declares it (HTTP2, GRPC), else in HTTP/1.1, whatever the
 * client spoke. Requests are counted with `reporter="source"` and the gateway as source, as Istio's gateways report.
 * As Istio's gateways, TLS 1.2 is the oldest version accepted from clients outside the mesh.
 */
import net from 'node:net';
import { Duplex } from 'node:stream';
import tls from 'node:tls';
import { describeError, MeshError } from '../lib/errors.js';
import { formatHostPort } from '../lib/ip.js';
import type { LocalProxies } from '../ztunnel/ztunnel.js';
import { LocalWorkloadInformation } from '../ztunnel/proxy/local-workload.js';
import { Outbound } from '../ztunnel/proxy/outbound.js';
import type { ProxyContext } from '../ztunnel/proxy/proxy-context.js';
import type { MetricsRegistry } from '../ztunnel/admin/prom-client-core.js';
import { WaypointHttp, type Tunnel } from './http-proxy.js';
import { RequestMetrics } from './request-metrics.js';
import { WaypointAuthorizer } from './waypoint-authorizer.js';
import { ExtAuthzClient } from './ext-authz.js';
import type { WaypointRules } from './waypoint-rules.js';
import type { GatewayCredentials } from './gateway-credentials.js';
import {
  listenerForSni,
  virtualHostFor,
  type GatewayListenerConfig,
  type GatewayProtocol,
} from './gateway-listeners-config.js';
import { peekClientHello } from './client-hello.js';
import { clientCertificateRefusal } from './client-certificate.js';
import { pickBackend } from './route-table.js';
import { resolveServiceBehindWaypoint } from '../ztunnel/state/upstream.js';

/** Where the listeners bind: every IPv4 address of the pod, as Envoy's `0.0.0.0` listeners do. */
const BIND_ADDRESS = '0.0.0.0';

/** What an HTTP/2 client sends first (RFC 9113 §3.4). */
const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/**
 * `socket` as a plain stream: node's HTTP/2 server reads a TCP socket's handle directly, and would miss the bytes
 * read (and put back) to tell h2c from HTTP/1.1; a stream that is not a socket it reads through its events.
 */
function streamOf(socket: net.Socket): Duplex {
  const stream = new Duplex({
    read: () => void socket.resume(),
    write: (chunk: Buffer, _enc, cb) => void socket.write(chunk, cb),
    final: (cb) => void socket.end(cb),
    destroy: (e, cb) => {
      socket.destroy(e ?? undefined);
      cb(e);
    },
  });
  socket.on('data', (c: Buffer) => {
    if (!stream.push(c)) socket.pause();
  });
  socket.once('end', () => stream.push(null));
  socket.once('close', () => stream.destroy());
  return stream;
}

/**
 * How long a TLS client may take to send its ClientHello (Envoy's listener filter timeout), and to finish a handshake
 * the gateway terminates.
 */
const CLIENT_HELLO_TIMEOUT_MS = 15_000;

/**
 * What a port's server is made with: its protocol and, for the listeners that terminate TLS (HTTPS, TLS with
 * `terminate`), whether it asks clients for certificates (some listener verifies them) and requires them (every
 * one does, so the handshake itself refuses a client without one). Node fixes these when the server is made; a
 * change makes the server again.
 */
interface PortShape {
  readonly protocol: GatewayProtocol;
  readonly requestCert: boolean;
  readonly requireCert: boolean;
}

const sameShape = (a: PortShape, b: PortShape): boolean =>
  a.protocol === b.protocol && a.requestCert === b.requestCert && a.requireCert === b.requireCert;

interface PortServer {
  readonly shape: PortShape;
  readonly server: net.Server;
  /** The TLS server that terminates a TLS port's connections whose listener says so (it does not listen itself). */
  readonly terminator: tls.Server | undefined;
  listening: boolean;
  error: string | undefined;
}

export class GatewayListener implements LocalProxies {
  private readonly local: LocalWorkloadInformation;
  private readonly outbound: Outbound;
  private readonly http: WaypointHttp;
  private readonly servers = new Map<number, PortServer>();
  private readonly sockets = new Set<net.Socket>();
  private closed = false;

  constructor(
    private readonly ctx: ProxyContext,
    registry: MetricsRegistry,
    private readonly podUid: string,
    private readonly ip: string,
    private readonly rules: WaypointRules,
    private readonly credentials: GatewayCredentials,
  ) {
    this.local = LocalWorkloadInformation.byUid(ctx.state, podUid);
    const outbound = new Outbound(ctx, this.local);
    this.outbound = outbound;
    this.http = new WaypointHttp(
      ctx,
      outbound,
      ip,
      new RequestMetrics(registry),
      rules,
      new WaypointAuthorizer(rules, ctx.log),
      new ExtAuthzClient(ctx, outbound, ip),
    );
    rules.watch(() => this.reconcile());
    credentials.watch(() => this.refreshCertificates());
  }

  private listenersOn(port: number): GatewayListenerConfig[] {
    return this.rules.listeners.filter((l) => l.port === port);
  }

  /** The shape of the server of `port`'s listeners. */
  private shapeOf(port: number): PortShape {
    const on = this.listenersOn(port);
    const protocol = on[0]!.protocol;
    const terminating = on.filter((l) => l.protocol === 'HTTPS' || l.terminate);
    const verifying = terminating.filter((l) => l.clientCaNames.length > 0);
    return {
      protocol,
      requestCert: verifying.length > 0,
      requireCert:
        verifying.length > 0 &&
        verifying.length === terminating.length &&
        verifying.every((l) => !l.clientCertificateOptional),
    };
  }

  /** Opens a server for each port istiod's listeners name, and closes those no listener names any more. */
  reconcile(): void {
    if (this.closed) return;
    const want = new Map<number, PortShape>();
    for (const l of this.rules.listeners) if (!want.has(l.port)) want.set(l.port, this.shapeOf(l.port));
    for (const [port, s] of this.servers) {
      const w = want.get(port);
      if (w === undefined || !sameShape(w, s.shape)) {
        s.server.close();
        this.servers.delete(port);
        this.ctx.log.info({ port }, 'gateway listener closed');
      }
    }
    for (const [port, shape] of want) if (!this.servers.has(port)) this.open(port, shape);
    this.refreshCertificates();
  }

  private open(port: number, shape: PortShape): void {
    const { protocol } = shape;
    const terminator =
      protocol === 'TLS' ? this.tlsServer(port, shape, [], (s) => this.relayTerminated(s, port)) : undefined;
    const server = this.makeServer(port, shape, terminator);
    const entry: PortServer = { shape, server, terminator, listening: false, error: undefined };
    for (const s of [server, terminator])
      s?.on('tlsClientError', (e: Error, t: tls.TLSSocket) => {
        this.ctx.log.debug({ port, src: t.remoteAddress, error: e.message }, 'gateway: TLS handshake failed');
      });
    server.on('error', (e: Error) => {
      entry.error = e.message;
      this.ctx.log.error({ port, error: e.message }, 'gateway listener failed');
    });
    server.listen({ host: BIND_ADDRESS, port }, () => {
      entry.listening = true;
      this.ctx.log.info({ address: formatHostPort(BIND_ADDRESS, port), protocol }, 'gateway listener up');
    });
    this.servers.set(port, entry);
  }

  private makeServer(port: number, shape: PortShape, terminator: tls.Server | undefined): net.Server {
    switch (shape.protocol) {
      case 'HTTP':
        return net.createServer((s) => this.acceptPlain(s, port));
      case 'TLS':
      case 'TCP':
        return net.createServer((s) => this.passThrough(s, port, shape.protocol as 'TLS' | 'TCP', terminator));
      case 'HTTPS':
        // As Istio's gateways offer: HTTP/2 first, then HTTP/1.1.
        return this.tlsServer(port, shape, ['h2', 'http/1.1'], (s) =>
          this.accept(s, port, typeof s.servername === 'string' ? s.servername : undefined),
        );
    }
  }

  /** A server terminating TLS with the certificate of the listener the SNI picks, offering `alpn`. */
  private tlsServer(port: number, shape: PortShape, alpn: string[], onSecure: (s: tls.TLSSocket) => void): tls.Server {
    return tls.createServer(
      {
        minVersion: 'TLSv1.2',
        handshakeTimeout: CLIENT_HELLO_TIMEOUT_MS,
        ...(alpn.length > 0 ? { ALPNProtocols: alpn } : {}),
        requestCert: shape.requestCert,
        rejectUnauthorized: shape.requireCert,
        SNICallback: (sni, cb) => {
          const l = listenerForSni(this.listenersOn(port), sni);
          const ctx = l === undefined ? undefined : this.credentials.contextFor(l.credentialNames, l.clientCaNames);
          if (ctx === undefined) {
            this.ctx.log.warn({ port, sni }, 'gateway: no certificate for the TLS connection');
            cb(new MeshError('ZT_ERR_GATEWAY_NO_CERTIFICATE', `no certificate for ${sni} on port ${port}`));
          } else cb(null, ctx);
        },
      },
      onSecure,
    );
  }

  /** The TLS context for clients without SNI: that of the port's listener without a hostname. */
  private refreshCertificates(): void {
    for (const [port, s] of this.servers) {
      const server = s.shape.protocol === 'HTTPS' ? (s.server as tls.Server) : s.terminator;
      if (server === undefined) continue;
      const l = listenerForSni(this.listenersOn(port), undefined);
      const pairs = this.credentials.keyPairs(l?.credentialNames ?? []);
      const ca = this.credentials.caCertificates(l?.clientCaNames ?? []);
      if (pairs.length > 0 && ca.length >= Math.min(1, l?.clientCaNames.length ?? 0))
        server.setSecureContext({
          cert: pairs.map((p) => p.cert),
          key: pairs.map((p) => p.key),
          minVersion: 'TLSv1.2',
          ...(ca.length > 0 ? { ca: [...ca] } : {}),
        });
    }
  }

  /**
   * A plain HTTP connection: HTTP/2 when it opens with HTTP/2's connection preface (h2c with prior knowledge, which
   * Envoy's codec detects the same way), else HTTP/1.1.
   */
  private acceptPlain(socket: net.Socket, port: number): void {
    socket.on('error', () => undefined);
    let head: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      // Once per connection, until its first bytes tell: not the relay's path.
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const n = Math.min(head.length, H2_PREFACE.length);
      const h2 = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      if (h2 && n < H2_PREFACE.length) return;
      socket.off('data', onData);
      socket.pause();
      socket.unshift(head);
      this.accept(socket, port, undefined, h2);
    };
    socket.on('data', onData);
  }

  private accept(socket: net.Socket, port: number, sni: string | undefined, plainH2 = false): void {
    const self = this.local.current();
    if (self === undefined || this.rules.broken !== undefined) {
      socket.destroy();
      return;
    }
    if (socket instanceof tls.TLSSocket && this.refused(socket, port, sni)) return;
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    const https = sni !== undefined || socket instanceof tls.TLSSocket;
    const t: Tunnel = {
      self,
      ip: this.ip,
      port,
      peerAddr: formatHostPort(socket.remoteAddress ?? '', socket.remotePort ?? 0),
      sourceIp: socket.remoteAddress ?? '',
      parties: {
        reporter: 'source',
        source: self,
        sourceIdentity: undefined,
        destination: undefined,
        destinationService: undefined,
        mtls: false,
        upstreamMtls: true,
      },
      virtualHost: (host) => {
        const on = this.listenersOn(port);
        const scope = https ? [listenerForSni(on, sni)].flatMap((l) => l ?? []) : on;
        return virtualHostFor(scope, host);
      },
    };
    if (plainH2) this.http.serveHttp2(streamOf(socket), t);
    else if (socket instanceof tls.TLSSocket && socket.alpnProtocol === 'h2') this.http.serveHttp2(socket, t);
    else this.http.serveConnection(socket, t);
    socket.resume();
  }

  /** Whether the listener the SNI picks refuses the client's certificate: then the connection is closed. */
  private refused(socket: tls.TLSSocket, port: number, sni: string | undefined): boolean {
    const l = listenerForSni(this.listenersOn(port), sni);
    const refused = l === undefined ? undefined : clientCertificateRefusal(socket, l);
    if (refused === undefined) return false;
    this.ctx.log.info({ port, sni, src: socket.remoteAddress, error: refused }, 'gateway: client refused');
    socket.destroy();
    return true;
  }

  /**
   * A TLS or TCP connection: relayed as it is to the backend its listener's route picks, or, when the listener
   * terminates TLS, handed to the port's TLS server (`terminator`) with the bytes read so far.
   */
  private passThrough(
    socket: net.Socket,
    port: number,
    protocol: 'TLS' | 'TCP',
    terminator: tls.Server | undefined,
  ): void {
    socket.on('error', () => undefined);
    if (this.local.current() === undefined || this.rules.broken !== undefined) {
      socket.destroy();
      return;
    }
    if (protocol === 'TCP') {
      void this.relayTo(socket, port, protocol, undefined, Buffer.alloc(0));
      return;
    }
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      // Once per connection, until the ClientHello is whole: not the relay's path.
      head = Buffer.concat([head, chunk]);
      const peek = peekClientHello(head);
      if (peek.t === 'more') return;
      socket.off('data', onData);
      socket.pause();
      socket.setTimeout(0);
      if (peek.t === 'not-tls') {
        this.ctx.log.info({ port, src: socket.remoteAddress }, 'gateway: not a TLS ClientHello on a TLS listener');
        socket.destroy();
        return;
      }
      if (terminator !== undefined && listenerForSni(this.listenersOn(port), peek.sni)?.terminate === true) {
        socket.unshift(head);
        terminator.emit('connection', socket);
        return;
      }
      void this.relayTo(socket, port, protocol, peek.sni, head);
    };
    socket.on('data', onData);
    socket.setTimeout(CLIENT_HELLO_TIMEOUT_MS, () => socket.destroy());
  }

  /** A connection whose TLS the port's terminator ended: the bytes inside go where the listener's route says. */
  private relayTerminated(s: tls.TLSSocket, port: number): void {
    const sni = typeof s.servername === 'string' ? s.servername : undefined;
    s.on('error', () => undefined);
    if (this.refused(s, port, sni)) return;
    void this.relayTo(s, port, 'TLS', sni, Buffer.alloc(0));
  }

  /** Connects to the backend the route picks (over HBONE with the gateway's identity) and relays `socket` to it. */
  private async relayTo(
    socket: net.Socket,
    port: number,
    protocol: 'TLS' | 'TCP',
    sni: string | undefined,
    head: Buffer,
  ): Promise<void> {
    const on = this.listenersOn(port);
    const listener = protocol === 'TLS' ? listenerForSni(on, sni) : on[0];
    const table =
      listener === undefined ? undefined : virtualHostFor([listener], protocol === 'TLS' ? (sni ?? '') : '*');
    const action = table?.routes[0]?.action;
    const backend = action?.t === 'forward' ? pickBackend(action) : undefined;
    const self = this.local.current();
    const peerAddr = formatHostPort(socket.remoteAddress ?? '', socket.remotePort ?? 0);
    const refuse = (why: string): void => {
      this.ctx.log.info({ port, sni, src: peerAddr, reason: why }, 'gateway: connection refused');
      socket.destroy();
    };
    if (backend === undefined || backend.hostname === '' || self === undefined)
      return refuse(table === undefined ? 'no route for the connection' : 'no backend for the connection');
    const svc = this.ctx.state.serviceByKey(`${backend.namespace}/${backend.hostname}`);
    if (svc === undefined) return refuse(`route backend ${backend.namespace}/${backend.hostname} is not known yet`);
    let setup;
    try {
      const dest = resolveServiceBehindWaypoint(this.ctx.state, self, svc, backend.port, this.ip);
      // Failures are logged and counted by the outbound flow itself.
      setup = await this.outbound.connect(peerAddr, this.ip, dest.ip, dest.port);
    } catch (e) {
      return refuse(describeError(e));
    }
    if (socket.destroyed) {
      setup.upstream.destroy();
      return;
    }
    if (head.length > 0) setup.upstream.write(head);
    this.outbound.run(socket, setup);
  }

  pending(): string[] {
    const out: string[] = [];
    if (this.local.current() === undefined) out.push(`gateway workload ${this.podUid} not known yet`);
    for (const [port, s] of this.servers)
      if (!s.listening) out.push(`listener on port ${port} not up${s.error === undefined ? '' : `: ${s.error}`}`);
    return out;
  }

  dump(): Record<string, object> {
    return {
      gateway: {
        workload: this.podUid,
        listening: [...this.servers].map(([port, s]) => ({ port, protocol: s.shape.protocol, up: s.listening })),
        config: this.rules.dump(),
        certificates: this.credentials.dump(),
      },
    };
  }

  close(immediate: boolean): void {
    this.closed = true;
    for (const s of this.servers.values()) s.server.close();
    this.servers.clear();
    if (immediate) {
      for (const s of this.sockets) s.destroy();
      this.http.close();
    }
  }
}
