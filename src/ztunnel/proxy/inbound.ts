import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls, { type TLSSocket } from 'node:tls';
import { describeError, MeshError } from '../../lib/errors.js';
import { canonicalIp, formatHostPort, formatRemote } from '../../lib/ip.js';
import { WORKLOAD_WAIT_MS } from '../config.js';
import { HBONE_PORT } from '../../lib/istio-ports.js';
import type { WorkloadCertificate } from '../identity/workload-certificate.js';
import { workloadIdentity, type Workload } from '../state/workload.js';
import type { Authorization } from '../state/policy.js';
import { SERVER_TLS, serverTlsOptions, verifyClientIdentity } from '../tls/workload-tls.js';
import { baggageFor } from './baggage.js';
import { H2Session } from '../../h2/h2-session.js';
import type { H2Stream } from '../../h2/h2-stream.js';
import type { RequestHead } from '../../h2/message-headers.js';
import { H2ErrorCode } from '../../h2/frame.js';
import { startKeepalive } from './h2-keepalive.js';
import { meshErrorFromH2 } from './mesh-error-from-h2.js';
import { hboneSessionOptions } from './hbone-session-options.js';
import type { ConnectionInfo } from './connection-info.js';
import { buildInboundRequest, type InboundPeer, type InboundRefusal, type InboundRequest } from './inbound-request.js';
import type { LocalWorkloadInformation } from './local-workload.js';
import { logPolicyDecision } from './log-policy-decision.js';
import type { ProxyContext } from './proxy-context.js';
import { relay } from './relay.js';

/**
 * Where a proxy that stands in front of other workloads (a waypoint) sends an accepted CONNECT instead of to a local
 * app, with the connection as that proxy reports it: a duplex to relay to and its byte counts (sent, received), or
 * `serve`, which takes the tunnel itself once it is answered (an L7 proxy) and calls `done` when it ends. Rejects
 * with a MeshError to refuse with 503.
 */
export type InboundForward = (
  req: InboundRequest,
  peer: InboundPeer,
) => Promise<
  | { readonly upstream: Duplex; readonly bytes: () => [number, number]; readonly info: ConnectionInfo }
  | { readonly serve: (tunnel: H2Stream, done: (error?: Error) => void) => void; readonly info: ConnectionInfo }
>;

/**
 * HBONE inbound for one workload: mTLS + HTTP/2 CONNECT on `<listen IP>:15008` (ztunnel `src/proxy/inbound.rs`): the
 * workload's IP in local mode, the wildcard inside the pod in in-pod mode. The certificate is the local workload's
 * at each connection (ztunnel's `InboundCertProvider`), so the listener may start before the workload is known,
 * and a rotated certificate serves new connections while open ones keep theirs.
 */
export class InboundHbone {
  private listener: net.Server | undefined;
  private cert: WorkloadCertificate | undefined;
  /** Accepted connections waiting for the workload or its certificate before their handshake. */
  private readonly waiting = new Set<net.Socket>();
  private readonly sessions = new Set<H2Session>();

  constructor(
    private readonly ctx: ProxyContext,
    private readonly local: LocalWorkloadInformation,
    private readonly listenIp: string,
    private readonly forward?: InboundForward,
    /** The policies a CONNECT is checked against; the local workload's, as ztunnel enforces them, by default. */
    private readonly policiesFor?: (w: Workload) => Authorization[],
  ) {}

  get address(): string {
    return formatHostPort(this.listenIp, HBONE_PORT);
  }

  async start(): Promise<void> {
    const server = tls.createServer({
      ...SERVER_TLS,
      // HBONE carries interactive traffic: no Nagle on accepted sockets either (ztunnel sets TCP_NODELAY everywhere).
      noDelay: true,
      // A peer that stalls mid-handshake is dropped (Node's default would hold the socket for 120s).
      handshakeTimeout: this.ctx.config.hboneConnectTimeoutMs,
    });
    server.on('tlsClientError', (e: Error, s: TLSSocket) =>
      this.ctx.log.debug({ src: formatRemote(s), error: describeError(e) }, 'HBONE TLS handshake failed'),
    );
    server.on('secureConnection', (socket: TLSSocket) => this.onSecureConnection(socket));
    // Accepted sockets are not read until the certificate is known; then the TLS server takes them over.
    const listener = net.createServer(
      { pauseOnConnect: true, noDelay: true },
      (socket) => void this.accept(socket, server),
    );
    listener.on('error', (e) =>
      this.ctx.log.error({ error: describeError(e), addr: this.address }, 'HBONE listener error'),
    );
    await this.ctx.sockets.listen(listener, this.listenIp, HBONE_PORT);
    this.listener = listener;
  }

  /** Hands `socket` to the TLS server once the local workload's certificate is there; drops it if it never is. */
  private async accept(socket: net.Socket, server: tls.Server): Promise<void> {
    const src = formatRemote(socket);
    socket.on('error', () => undefined);
    this.waiting.add(socket);
    try {
      const w = await this.local.wait();
      if (w === undefined)
        throw new MeshError(
          'ZT_ERR_UNKNOWN_WORKLOAD',
          `workload ${this.local.key} is not known to this ztunnel (waited ${WORKLOAD_WAIT_MS / 1000}s)`,
        );
      const cert = await this.ctx.secrets.fetch(workloadIdentity(w));
      if (cert !== this.cert) {
        server.setSecureContext(serverTlsOptions(cert));
        this.cert = cert;
      }
    } catch (e) {
      this.ctx.log.warn(
        { src, dst: this.address, error: describeError(e) },
        'HBONE connection dropped before its handshake',
      );
      socket.destroy();
      return;
    } finally {
      this.waiting.delete(socket);
    }
    if (!socket.destroyed) server.emit('connection', socket);
  }

  /** Stops accepting. With `immediate`, also tears down open HBONE connections. */
  close(immediate: boolean): void {
    this.listener?.close();
    for (const s of this.waiting) s.destroy();
    for (const s of this.sessions) {
      if (immediate) s.destroy();
      else s.close();
    }
  }

  /** The client's SPIFFE identity in this workload's trust domain, over h2, or why the client is refused. */
  private clientIdentity(socket: TLSSocket): ReturnType<typeof verifyClientIdentity> {
    const local = this.local.current();
    if (local === undefined)
      return new MeshError('ZT_ERR_UNKNOWN_WORKLOAD', `workload ${this.local.key} is no longer known to this ztunnel`);
    if (socket.alpnProtocol !== 'h2')
      return new MeshError('ZT_ERR_HBONE_HANDSHAKE', 'client did not negotiate ALPN h2');
    return verifyClientIdentity(socket, workloadIdentity(local).trustDomain);
  }

  /** Authenticates the client before any HTTP/2, then runs HTTP/2 on the TLS socket. */
  private onSecureConnection(socket: TLSSocket): void {
    const addr = formatRemote(socket);
    socket.on('error', (e) => this.ctx.log.debug({ src: addr, error: describeError(e) }, 'HBONE connection error'));
    const id = this.clientIdentity(socket);
    if (id instanceof MeshError) {
      this.ctx.log.warn({ src: addr, error: describeError(id) }, 'rejected HBONE client');
      socket.destroy();
      return;
    }
    const peer: InboundPeer = {
      identity: id,
      addr,
      ip: canonicalIp(socket.remoteAddress ?? '') ?? '',
      localIp: canonicalIp(socket.localAddress ?? '') ?? '',
    };
    const session = new H2Session(socket, hboneSessionOptions(this.ctx.config, 'server'));
    this.sessions.add(session);
    session.once('close', (e) => {
      this.sessions.delete(session);
      if (e !== undefined)
        this.ctx.log.debug({ src: addr, error: describeError(meshErrorFromH2(e)) }, 'HBONE connection error');
    });
    session.on('stream', (stream, head) => this.onStream(stream, head, peer));
    startKeepalive(
      session,
      (why) => {
        this.ctx.log.warn({ src: addr, reason: why }, 'HBONE client connection is dead; closing it');
        session.destroy(new MeshError('ZT_ERR_HBONE_CONNECTION_LOST', `HBONE connection from ${addr} lost: ${why}`));
      },
      this.ctx.config.hboneKeepaliveIntervalMs,
      this.ctx.config.hboneKeepaliveTimeoutMs,
    );
  }

  private onStream(stream: H2Stream, head: RequestHead, peer: InboundPeer): void {
    stream.on('error', () => undefined); // reported through relay / close; never crash on a peer's reset
    void this.handle(stream, head, peer).catch((e: unknown) => {
      this.ctx.log.error({ error: describeError(e) }, 'unexpected inbound failure');
      stream.reset(H2ErrorCode.INTERNAL_ERROR);
    });
  }

  /** One CONNECT: decide, log and report, connect to the app, answer, relay (ztunnel `serve_connect`). */
  private async handle(stream: H2Stream, head: RequestHead, peer: InboundPeer): Promise<void> {
    const { state, connections, config, sockets } = this.ctx;
    const req = buildInboundRequest(head, peer, this.local, state, config, this.policiesFor);
    if (req.policy !== undefined) logPolicyDecision(this.ctx, req.info, req.policy);
    if (!req.ok) {
      this.refuse(stream, req);
      return;
    }
    let fwd: Awaited<ReturnType<InboundForward>>;
    try {
      if (this.forward !== undefined) fwd = await this.forward(req, peer);
      else {
        const { ip, port } = req.upstream;
        // Connect to the app from the client's own IP where the sockets can spoof it (ztunnel `freebind_connect`).
        const sock = await sockets.connect(ip, port, sockets.inboundSource(peer.ip, ip));
        fwd = { upstream: sock, bytes: () => [sock.bytesWritten, sock.bytesRead], info: req.info };
      }
    } catch (e) {
      const error = e instanceof MeshError ? e : new MeshError('ZT_ERR_UPSTREAM_CONNECT', describeError(e));
      // A forward hook's policy refusal is answered as ztunnel's own is.
      const denied = error.code === 'ZT_ERR_POLICY_DENIED';
      this.refuse(stream, {
        status: denied ? 401 : 503,
        flags: denied ? 'DENY' : 'CONNECT',
        error,
        built: true,
        info: req.info,
      });
      return;
    }
    const upstream = 'upstream' in fwd ? fwd.upstream : undefined;
    if (stream.destroyed || stream.streamClosed) {
      upstream?.destroy();
      return;
    }
    const tracked = connections.open(
      fwd.info,
      () => {
        upstream?.destroy();
        stream.reset();
      },
      'bytes' in fwd ? fwd.bytes : () => [stream.bytesReceived, stream.bytesSent],
    );
    stream.respond(200, config.enableResponseBaggage ? [['baggage', baggageFor(req.destination)]] : []);
    if ('serve' in fwd) fwd.serve(stream, (err) => tracked.finish(err));
    else relay(stream, fwd.upstream, (err) => tracked.finish(err));
  }

  /** Reports a refused CONNECT and answers it with its status, unless the client is already gone. */
  private refuse(stream: H2Stream, r: Pick<InboundRefusal, 'status' | 'flags' | 'error' | 'built' | 'info'>): void {
    if (r.built) this.ctx.connections.builtThenFailed(r.info, r.flags, r.error);
    else this.ctx.connections.failed(r.info, r.flags, r.error);
    if (!stream.destroyed) stream.respond(r.status, [], true);
  }
}
