/**
 * A plain Node mTLS tunnel (`tls` + `pipe`, no HTTP/2), the bench's "Node floor": it shows what Node's own TLS
 * stack costs on this machine, so amesh's HTTP/2 overhead can be told apart from Node's.
 *
 * node dist/bench/node-tls-tunnel.js client|server CERT KEY CA LISTEN_HOST:PORT=CONNECT_HOST:PORT ...
 */
import net from 'node:net';
import tls from 'node:tls';
import { readFileSync } from 'node:fs';
import { HBONE_TLS } from '../src/ztunnel/tls/workload-tls.js';

const [role, certFile, keyFile, caFile, ...maps] = process.argv.slice(2);
const opts = {
  cert: readFileSync(certFile!),
  key: readFileSync(keyFile!),
  ca: readFileSync(caFile!),
  minVersion: HBONE_TLS.minVersion,
  maxVersion: HBONE_TLS.maxVersion,
  ciphers: HBONE_TLS.ciphers,
};
const hp = (s: string): { host: string; port: number } => ({
  host: s.slice(0, s.lastIndexOf(':')),
  port: Number(s.slice(s.lastIndexOf(':') + 1)),
});
/** Both ways, half-close preserved (as stunnel does), torn down together on error. */
const join = (a: net.Socket, b: net.Socket): void => {
  a.pipe(b);
  b.pipe(a);
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
};
for (const m of maps) {
  const [from = '', to = ''] = m.split('=');
  const l = hp(from);
  const c = hp(to);
  if (role === 'server') {
    tls
      .createServer({ ...opts, requestCert: true, rejectUnauthorized: true, noDelay: true, allowHalfOpen: true }, (s) =>
        join(s, net.connect({ ...c, noDelay: true, allowHalfOpen: true })),
      )
      .listen(l.port, l.host);
  } else {
    net
      .createServer({ noDelay: true, allowHalfOpen: true }, (s) =>
        join(
          s,
          tls.connect({
            ...opts,
            socket: net.connect({ ...c, noDelay: true, allowHalfOpen: true }),
            allowHalfOpen: true,
            checkServerIdentity: () => undefined,
          } as tls.ConnectionOptions),
        ),
      )
      .listen(l.port, l.host);
  }
}
