import http from 'node:http';
import net from 'node:net';
import os from 'node:os';

/** An HTTP request is recognised from its first bytes; anything else is echoed as raw TCP. */
const HTTP_METHOD = /^(GET|HEAD|POST|PUT|DELETE|OPTIONS|PATCH|CONNECT|TRACE) /;

export interface EchoServer {
  readonly server: net.Server;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The test app, like Istio's echo: TCP bytes come back unchanged; an HTTP request gets a JSON description of what
 * the server saw (peer address, method, path, headers, hostname).
 */
export async function startEchoServer(host: string, port: number, name = os.hostname()): Promise<EchoServer> {
  const httpServer = http.createServer((req, res) => {
    const body = JSON.stringify({
      hostname: name,
      peer: `${req.socket.remoteAddress ?? ''}:${req.socket.remotePort ?? ''}`,
      local: `${req.socket.localAddress ?? ''}:${req.socket.localPort ?? ''}`,
      method: req.method,
      path: req.url,
      headers: req.headers,
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true, noDelay: true }, (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
    s.once('data', (first: Buffer) => {
      s.pause();
      s.unshift(first);
      if (HTTP_METHOD.test(first.subarray(0, 8).toString('latin1'))) {
        httpServer.emit('connection', s);
        s.resume();
      } else {
        s.pipe(s);
      }
    });
    s.once('end', () => {
      if (s.bytesRead === 0) s.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => resolve());
  });
  const addr = server.address() as net.AddressInfo;
  return {
    server,
    port: addr.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
