import http from 'node:http';
import type { ListenAddress } from './address.js';
import { MeshError } from './errors.js';

export type Handler = (
  req: http.IncomingMessage,
  url: URL,
) => Promise<{ status: number; body: string; type?: string }> | { status: number; body: string; type?: string };

/**
 * A small HTTP server for admin, metrics and readiness endpoints: routes by path, never throws into Node. `inUse`
 * is what the error says to do when the port is taken.
 */
export async function startHttpServer(
  addr: ListenAddress,
  routes: Record<string, Handler>,
  what: string,
  inUse = `is another ztunnel running? pass a different --${what}-address`,
): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const h = routes[url.pathname];
    const send = (status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    if (h === undefined) {
      send(404, 'not found\n');
      return;
    }
    Promise.resolve()
      .then(() => h(req, url))
      .then(
        (r) => send(r.status, r.body, r.type),
        (e: unknown) => send(500, `${(e as Error).message}\n`),
      );
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        new MeshError(
          'AMESH_ERR_CONFIG',
          `cannot listen for ${what} on ${addr.host}:${addr.port}: ${e.code ?? e.message}${e.code === 'EADDRINUSE' ? ` (${inUse})` : ''}`,
        ),
      ),
    );
    server.listen(addr.port, addr.host, () => resolve());
  });
  server.unref();
  return server;
}

export function boundPort(s: http.Server): number {
  const a = s.address();
  return typeof a === 'object' && a !== null ? a.port : 0;
}
