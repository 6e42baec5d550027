/**
 * istiod's gRPC port (15012): TLS, with limits on what an unauthenticated peer can hold. grpc-js's `bindAsync` and
 * `createSsl` expose no connection cap and no TLS handshake deadline (Node's default is 120 s), and a session it
 * closes only half-closes the socket (Node's http2 waits for the peer's FIN, which a hostile peer never sends). So
 * the port is a `net.Server` of ours with `maxConnections`; each socket gets its TLS here, with a handshake
 * deadline and a bounded wait for the peer's FIN once the session is over, and the decrypted stream is handed to
 * grpc-js through its connection injector (HTTP/2 over an already-secure stream). Connections are also capped per
 * source IP, so one peer cannot starve the others of the global cap; refusals are logged at most once an interval
 * (ConnectionDropLog), so a flood cannot flood the log.
 */
import net from 'node:net';
import tls from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { MeshError } from '../lib/errors.js';
import type { ListenAddress } from '../lib/address.js';
import { ConnectionDropLog } from './connection-drop-log.js';

export interface GrpcLimits {
  /** Concurrent TCP connections; more are closed at accept. */
  readonly maxConnections: number;
  /** Concurrent TCP connections from one source IP; more from it are closed at accept, so one peer cannot take them all. */
  readonly maxConnectionsPerSource: number;
  /** Refused connections are logged together, one line per this interval at most. */
  readonly refusedLogIntervalMs: number;
  /** A connection must finish its TLS handshake within this. */
  readonly handshakeTimeoutMs: number;
  /** A connection with no open call for this long is closed (GOAWAY). */
  readonly idleTimeoutMs: number;
  /** Largest request message; larger ones fail with RESOURCE_EXHAUSTED. */
  readonly maxReceiveMessageBytes: number;
  /** Server keepalive PING interval and the time to wait for its ACK. */
  readonly keepaliveTimeMs: number;
  readonly keepaliveTimeoutMs: number;
}

export interface RunningGrpcServer {
  readonly port: number;
  /** Closes the port and every connection: open xDS streams would hold a graceful shutdown forever. */
  stop(): void;
}

/** A grpc-js server with `limits`, `interceptors` and `addServices` on `address`, serving `keyPem`/`certChainPem`. */
export async function startGrpcServer(
  o: {
    address: ListenAddress;
    keyPem: string;
    certChainPem: string;
    limits: GrpcLimits;
    interceptors: grpc.ServerInterceptor[];
    addServices: (s: grpc.Server) => void;
  },
  log: Logger,
): Promise<RunningGrpcServer> {
  const server = new grpc.Server({
    interceptors: o.interceptors,
    'grpc.max_receive_message_length': o.limits.maxReceiveMessageBytes,
    'grpc.max_connection_idle_ms': o.limits.idleTimeoutMs,
    'grpc.keepalive_time_ms': o.limits.keepaliveTimeMs,
    'grpc.keepalive_timeout_ms': o.limits.keepaliveTimeoutMs,
  });
  o.addServices(server);
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  // TLS 1.3 only: ztunnel's control-plane client offers nothing older unless TLS12_ENABLED (ztunnel src/tls/lib.rs).
  const tlsServer = tls.createServer({
    key: o.keyPem,
    cert: o.certChainPem,
    ALPNProtocols: ['h2'],
    minVersion: 'TLSv1.3',
    handshakeTimeout: o.limits.handshakeTimeoutMs,
  });
  tlsServer.on('tlsClientError', (_e: Error, s: tls.TLSSocket) => s.destroy());
  tlsServer.on('secureConnection', (secure: tls.TLSSocket) => {
    secure.on('error', () => secure.destroy());
    injector.injectConnection(secure);
  });
  const sockets = new Set<net.Socket>();
  const perSource = new Map<string, number>();
  const drops = new ConnectionDropLog(
    log,
    { maxConnections: o.limits.maxConnections, maxConnectionsPerSource: o.limits.maxConnectionsPerSource },
    o.limits.refusedLogIntervalMs,
  );
  const listener = net.createServer((socket) => {
    const source = socket.remoteAddress ?? '?';
    const n = perSource.get(source) ?? 0;
    if (n >= o.limits.maxConnectionsPerSource) {
      drops.record(source, 'per source');
      socket.destroy();
      return;
    }
    perSource.set(source, n + 1);
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      const left = (perSource.get(source) ?? 1) - 1;
      if (left === 0) perSource.delete(source);
      else perSource.set(source, left);
    });
    tlsServer.emit('connection', socket);
  });
  listener.maxConnections = o.limits.maxConnections;
  listener.on('drop', (d?: { remoteAddress?: string }) => drops.record(d?.remoteAddress ?? '?', 'global'));
  await new Promise<void>((resolve, reject) => {
    listener.once('error', (e) =>
      reject(
        new MeshError(
          'AMESH_ERR_CONFIG',
          `cannot listen for gRPC on ${o.address.host}:${o.address.port}: ${e.message}`,
        ),
      ),
    );
    listener.listen(o.address.port, o.address.host, resolve);
  });
  const addr = listener.address() as net.AddressInfo;
  return {
    port: addr.port,
    stop: () => {
      drops.stop();
      listener.close();
      server.forceShutdown();
      injector.destroy();
      for (const s of sockets) s.destroy();
    },
  };
}
