/**
 * Istio's sample ext_authz server (istio `samples/extauthz/cmd/extauthz/main.go`): the HTTP check on one port and
 * the gRPC v3 `Authorization/Check` on another, both on all addresses unless given one. Port 0 takes a port the
 * kernel chooses; the ports it got are returned.
 */
import http from 'node:http';
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { Authorization, type CheckRequest, type CheckResponse } from '../api/envoy/service/auth/v3/external_auth_pb.js';
import { MeshError } from '../lib/errors.js';
import { grpcServiceDefinition } from '../lib/grpc-service.js';
import { grpcCheck } from './grpc-check.js';
import { httpCheck } from './http-check.js';

export interface ExtAuthzOptions {
  /** Listen on this address only; undefined: all addresses (IPv6 and IPv4 where the host has both). */
  readonly address: string | undefined;
  readonly httpPort: number;
  readonly grpcPort: number;
  /** A gRPC check without the `x-ext-authz` header is allowed when the source principal ends with `/sa/<this>`. */
  readonly allowServiceAccount: string;
}

export interface ExtAuthzServer {
  readonly httpPort: number;
  readonly grpcPort: number;
  /** Closes both ports and every connection. */
  close(): Promise<void>;
}

/** Listens with `server` on `port` (`host`, or all addresses) and returns the port it got. */
async function listen(server: net.Server, host: string | undefined, port: number, what: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        new MeshError(
          'AMESH_ERR_CONFIG',
          `cannot listen for ${what} on ${host ?? 'all addresses'} port ${port}: ${e.code ?? e.message}${e.code === 'EADDRINUSE' ? ` (pass a different --${what})` : ''}`,
        ),
      ),
    );
    server.listen({ host, port }, resolve);
  });
  return (server.address() as net.AddressInfo).port;
}

/** Starts both checks; `log` gets one line per decision. */
export async function startExtAuthzServer(o: ExtAuthzOptions, log: (line: string) => void): Promise<ExtAuthzServer> {
  const httpServer = http.createServer((req, res) => httpCheck(req, res, log));
  const grpcServer = new grpc.Server();
  grpcServer.addService(grpcServiceDefinition(Authorization), {
    check: (call: grpc.ServerUnaryCall<CheckRequest, CheckResponse>, done: grpc.sendUnaryData<CheckResponse>) => {
      const { response, logLine } = grpcCheck(call.request, o.allowServiceAccount);
      log(logLine);
      done(null, response);
    },
  });
  // A port of our own handing its connections to grpc-js, so that both ports listen alike (bindAsync takes a
  // host:port to resolve, not "all addresses").
  const injector = grpcServer.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const grpcSockets = new Set<net.Socket>();
  const grpcListener = net.createServer((socket) => {
    grpcSockets.add(socket);
    socket.once('close', () => grpcSockets.delete(socket));
    socket.on('error', () => socket.destroy());
    injector.injectConnection(socket);
  });
  const close = async (): Promise<void> => {
    const closed = (s: net.Server): Promise<void> =>
      s.listening ? new Promise((resolve) => s.close(() => resolve())) : Promise.resolve();
    const done = Promise.all([closed(httpServer), closed(grpcListener)]);
    httpServer.closeAllConnections();
    grpcServer.forceShutdown();
    injector.destroy();
    for (const s of grpcSockets) s.destroy();
    await done;
  };
  try {
    const httpPort = await listen(httpServer, o.address, o.httpPort, 'http');
    const grpcPort = await listen(grpcListener, o.address, o.grpcPort, 'grpc');
    return { httpPort, grpcPort, close };
  } catch (e) {
    await close();
    throw e;
  }
}
