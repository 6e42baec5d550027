import net from 'node:net';
import tls, { type TLSSocket } from 'node:tls';
import { describeError, MeshError } from '../../lib/errors.js';
import { canonicalIp, formatHostPort, parseHostPort } from '../../lib/ip.js';
import type { Identity } from '../../lib/spiffe.js';
import { CONNECT_TIMEOUT_MS, ILLEGAL_PORTS, WORKLOAD_WAIT_MS } from '../config.js';
import { HBONE_PORT } from '../../lib/istio-ports.js';
import type { WorkloadCertificate } from '../identity/workload-certificate.js';
import { evaluate, type RbacConnection } from '../rbac.js';
import { workloadIdentity, type Workload } from '../state/workload.js';
import { serviceKey, type Service } from '../state/service.js';
import { SERVER_TLS, serverTlsOptions, verifyClientIdentity } from '../tls/workload-tls.js';
import type { ResponseFlags } from '../admin/metrics.js';
import { baggageFor } from './baggage.js';
import { guessInboundService } from './guess-inbound-service.js';
import { H2Session } from '../h2/h2-session.js';
import type { H2Stream } from '../h2/h2-stream.js';
import type { RequestHead } from '../h2/message-headers.js';
import { H2ErrorCode } from '../h2/frame.js';
import { startKeepalive } from './h2-keepalive.js';
import { hboneSessionOptions } from './hbone-session-options.js';
import type { LocalWorkloadInformation } from './local-workload.js';
import type { ProxyContext } from './proxy-context.js';
import { relay } from './relay.js';

/** An authenticated HBONE client connection. */
interface Peer {
  readonly identity: Identity;
  readonly addr: string;
  readonly ip: string;
  /** The address the connection arrived on (ztunnel's `dst`): the workload IP it was made to. */
  readonly localIp: string;
}

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
      handshakeTimeout: CONNECT_TIMEOUT_MS,
    });
    server.on('tlsClientError', (e: Error, s: TLSSocket) =>
      this.ctx.log.debug(
        { src: `${s.remoteAddress ?? '?'}:${s.remotePort ?? '?'}`, error: describeError(e) },
        'HBONE TLS handshake failed',
      ),
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
    const src = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
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

  /** Authenticates the client before any HTTP/2, then runs HTTP/2 on the TLS socket. */
  private onSecureConnection(socket: TLSSocket): void {
    const addr = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    socket.on('error', (e) => this.ctx.log.debug({ src: addr, error: describeError(e) }, 'HBONE connection error'));
    const local = this.local.current();
    const id =
      local === undefined
        ? new MeshError('ZT_ERR_UNKNOWN_WORKLOAD', `workload ${this.local.key} is no longer known to this ztunnel`)
        : socket.alpnProtocol === 'h2'
          ? verifyClientIdentity(socket, workloadIdentity(local).trustDomain)
          : new MeshError('ZT_ERR_HBONE_HANDSHAKE', 'client did not negotiate ALPN h2');
    if (id instanceof MeshError) {
      this.ctx.log.warn({ src: addr, error: describeError(id) }, 'rejected HBONE client');
      socket.destroy();
      return;
    }
    const peer: Peer = {
      identity: id,
      addr,
      ip: canonicalIp(socket.remoteAddress ?? '') ?? '',
      localIp: canonicalIp(socket.localAddress ?? '') ?? '',
    };
    const session = new H2Session(socket, hboneSessionOptions(this.ctx.config, 'server'));
    this.sessions.add(session);
    session.once('close', (e) => {
      this.sessions.delete(session);
      if (e !== undefined) this.ctx.log.debug({ src: addr, error: describeError(e) }, 'HBONE connection error');
    });
    session.on('stream', (stream, head) => this.onStream(stream, head, peer));
    startKeepalive(session, (why) => {
      this.ctx.log.warn({ src: addr, reason: why }, 'HBONE client connection is dead; closing it');
      session.destroy(new MeshError('ZT_ERR_HBONE_CONNECTION_LOST', `HBONE connection from ${addr} lost: ${why}`));
    });
  }

  private onStream(stream: H2Stream, head: RequestHead, peer: Peer): void {
    stream.on('error', () => undefined); // reported through relay / close; never crash on a peer's reset
    void this.handle(stream, head, peer).catch((e: unknown) => {
      this.ctx.log.error({ error: describeError(e) }, 'unexpected inbound failure');
      stream.reset(H2ErrorCode.INTERNAL_ERROR);
    });
  }

  private async handle(stream: H2Stream, head: RequestHead, peer: Peer): Promise<void> {
    const { state, connections, config } = this.ctx;
    const authority = head.authority ?? '';
    const local = this.local.current();
    const ip = peer.localIp;
    const source = state.workloadByAddr(local?.network ?? config.network, peer.ip);
    const base = {
      direction: 'inbound' as const,
      workloadUid: this.local.key,
      src: peer.addr,
      originalDst: authority,
      actualDst: formatHostPort(ip, HBONE_PORT),
      hboneAddr: authority,
      protocol: 'HBONE' as const,
    };
    const parties = (dst: Workload | undefined, svc: Service | undefined) => ({
      reporter: 'destination' as const,
      source,
      sourceIdentity: peer.identity,
      destination: dst,
      destinationService: svc,
      mtls: true,
    });
    // The service the connection was for, once known: refusals after that point are attributed to it too.
    let svc: Service | undefined;
    const reject = (status: number, flags: ResponseFlags, err: MeshError, built = false): void => {
      const info = { ...base, parties: parties(local, svc) };
      if (built) connections.builtThenFailed(info, flags, err);
      else connections.failed(info, flags, err);
      if (!stream.destroyed) stream.respond(status, [], true);
    };

    if (head.method !== 'CONNECT') {
      reject(400, '-', new MeshError('ZT_ERR_HBONE_BAD_REQUEST', `method ${head.method} is not CONNECT`));
      return;
    }
    const target = parseHostPort(authority);
    if (target === undefined) {
      reject(400, '-', new MeshError('ZT_ERR_HBONE_BAD_REQUEST', `":authority" "${authority}" is not host:port`));
      return;
    }
    if (local === undefined) {
      reject(
        503,
        'CONNECT',
        new MeshError('ZT_ERR_UNKNOWN_WORKLOAD', `workload ${this.local.key} is no longer known to this ztunnel`),
      );
      return;
    }
    let targetPort = target.port;
    // A CONNECT names the IP the connection arrived on (ztunnel src/proxy/inbound.rs `validate_destination`): a
    // dual-stack workload is reached on each family's own listener, never across them.
    if (net.isIP(target.host) !== 0 && target.host !== ip) {
      reject(
        400,
        '-',
        new MeshError(
          'ZT_ERR_HBONE_IP_MISMATCH',
          `CONNECT target ${target.host} is not the IP this connection arrived on (${ip})`,
        ),
      );
      return;
    }
    if (target.host !== ip) {
      svc = state.serviceByHostname(target.host, local.namespace);
      const mapped =
        svc === undefined
          ? undefined
          : (svc.endpoints[local.uid]?.port[String(target.port)] ?? svc.ports[String(target.port)]);
      if (svc === undefined || mapped === undefined || mapped === 0) {
        reject(
          503,
          'CONNECT',
          new MeshError('ZT_ERR_SERVICE_PORT', `no service port for ${authority} on workload ${local.uid}`),
        );
        return;
      }
      targetPort = mapped;
    }
    // Telemetry only (ztunnel `src/proxy.rs` guess_inbound_service): `Forwarded: host=` names the service the
    // client resolved, believed only when this workload backs it; otherwise a service whose port reaches this one.
    if (svc === undefined) {
      const forwarded = head.fields.find(([name]) => name === 'forwarded')?.[1];
      const fwdHost = /(?:^|;)\s*host=("?)([^";,]+)\1/i.exec(forwarded ?? '')?.[2];
      const named = fwdHost === undefined ? undefined : state.serviceByHostname(fwdHost, local.namespace);
      svc =
        named !== undefined && local.services.includes(serviceKey(named))
          ? named
          : guessInboundService(state, local, targetPort);
    }
    if (ILLEGAL_PORTS.has(targetPort)) {
      reject(503, 'CONNECT', new MeshError('ZT_ERR_SELF_CALL', `target port ${targetPort} belongs to ztunnel itself`));
      return;
    }
    const rbac: RbacConnection = { srcIp: peer.ip, dstIp: ip, dstPort: targetPort, srcIdentity: peer.identity };
    const decision = evaluate(state.policiesFor(local), rbac);
    for (const n of decision.dryRunNotes) this.ctx.log.info({ src: peer.addr, dst: authority }, n);
    const policyLevel = config.authzPolicyInfoLogging ? 'info' : 'debug';
    if (!decision.allowed) {
      this.ctx.log[policyLevel](
        { src: peer.addr, dst: authority, reason: decision.reason },
        'connection denied by policy',
      );
      reject(401, 'DENY', new MeshError('ZT_ERR_POLICY_DENIED', decision.reason), true);
      return;
    }
    this.ctx.log[policyLevel]({ src: peer.addr, dst: authority }, 'connection allowed by policy');

    // Connect to the app from the client's own IP where the sockets can spoof it (ztunnel `freebind_connect`).
    let upstream;
    try {
      upstream = await this.ctx.sockets.connect(ip, targetPort, this.ctx.sockets.inboundSource(peer.ip, ip));
    } catch (e) {
      reject(
        503,
        'CONNECT',
        e instanceof MeshError ? e : new MeshError('ZT_ERR_UPSTREAM_CONNECT', describeError(e)),
        true,
      );
      return;
    }
    if (stream.destroyed || stream.streamClosed) {
      upstream.destroy();
      return;
    }
    const tracked = connections.open(
      { ...base, parties: parties(local, svc), rbac },
      () => {
        upstream.destroy();
        stream.reset();
      },
      () => [upstream.bytesWritten, upstream.bytesRead],
    );
    stream.respond(200, config.enableResponseBaggage ? [['baggage', baggageFor(local)]] : []);
    relay(stream, upstream, (err) => tracked.finish(err));
  }
}
