import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { once } from 'node:events';
import { CertificateAuthority, issueServingCertificate } from '../../lib/pki/certificate-authority.js';
import { DEFAULTS } from '../config.js';
import { H2Session } from '../../h2/h2-session.js';
import type { H2Stream } from '../../h2/h2-stream.js';
import { H2ErrorCode } from '../../h2/frame.js';
import { isMeshError } from '../../lib/errors.js';
import { hboneSessionOptions } from './hbone-session-options.js';
import { relay, STREAM_WRITE_BOUND } from './relay.js';
import { APP_SOCKET_OPTIONS } from './socket-factory.js';

const FRAME = 16384;

/** A client and a server HBONE session on one connection (TLS when `secure` is given), as two ztunnels run them. */
async function sessionPair(
  host: string,
  secure?: { key: string; cert: string; ca: string },
): Promise<{ client: H2Session; server: H2Session; close: () => void }> {
  const listener =
    secure === undefined
      ? net.createServer()
      : tls.createServer({ key: secure.key, cert: secure.cert, minVersion: 'TLSv1.3' });
  listener.listen(0, host);
  await once(listener, 'listening');
  const port = (listener.address() as net.AddressInfo).port;
  const accepted = once(listener, secure === undefined ? 'connection' : 'secureConnection') as Promise<[net.Socket]>;
  const socket =
    secure === undefined
      ? net.connect(port, host)
      : tls.connect({ host, port, servername: 'localhost', ca: secure.ca });
  await once(socket, secure === undefined ? 'connect' : 'secureConnect');
  const client = new H2Session(socket, hboneSessionOptions(DEFAULTS, 'client'));
  const server = new H2Session((await accepted)[0], hboneSessionOptions(DEFAULTS, 'server'));
  await once(client, 'remoteSettings');
  return {
    client,
    server,
    close: () => {
      client.destroy();
      server.destroy();
      listener.close();
    },
  };
}

/** An HBONE-over-TLS session pair whose server streams are relayed into a counting TCP sink, as ztunnel's inbound does. */
async function relayThroughTls(
  payload: Buffer,
  appOptions: net.SocketConstructorOpts,
): Promise<{ received: number; appWrites: number }> {
  const ca = await CertificateAuthority.selfSigned('cluster.local');
  const { keyPem, chain } = await issueServingCertificate(ca, ['localhost'], 3600);
  let received = 0;
  const sink = net.createServer((s) => s.on('data', (d: Buffer) => (received += d.length)));
  sink.listen(0, '127.0.0.1');
  await once(sink, 'listening');
  const pair = await sessionPair('127.0.0.1', { key: keyPem, cert: chain.slice(0, -1).join(''), ca: chain.at(-1)! });
  let appWrites = 0;
  const relayed = new Promise<void>((resolve) => {
    pair.server.on('stream', (stream) => {
      const app = new net.Socket(appOptions).connect((sink.address() as net.AddressInfo).port, '127.0.0.1');
      // Count what the relay hands the socket: one call per write syscall it will make.
      const write = app._write.bind(app);
      const writev = app._writev!.bind(app);
      app._write = (c, e, cb): void => (appWrites++, write(c, e, cb));
      app._writev = (cs, cb): void => (appWrites++, writev(cs, cb));
      stream.respond(200);
      relay(stream, app, () => resolve());
    });
  });
  const stream = pair.client.connect('127.0.0.1:80');
  stream.on('error', () => undefined); // the session is destroyed under it at the end
  stream.resume();
  stream.end(payload);
  await relayed;
  pair.close();
  sink.close();
  return { received, appWrites };
}

test("relay: into an app-facing socket (ztunnel's buffer), the DATA of one loop turn leaves in one write", async (t) => {
  const payload = Buffer.alloc(64 * FRAME, 0x61);
  const { received, appWrites } = await relayThroughTls(payload, APP_SOCKET_OPTIONS);
  assert.equal(received, payload.length);
  t.diagnostic(`${appWrites} app writes for 64 × 16 KiB`);
  // Unbatched, each TLS read (at most one 16 KiB record) is a write of its own: about 64. Batched per loop turn,
  // a turn's reads leave together: a handful.
  assert.ok(appWrites <= 16, `the app socket saw ${appWrites} writes for 64 × 16 KiB`);
});

test('relay: an app socket is read on while its HBONE stream holds less than STREAM_WRITE_BOUND, paused beyond it, and every byte arrives', async () => {
  const pair = await sessionPair('127.0.101.1');
  let received = 0;
  const streams: H2Stream[] = [];
  const allIn = new Promise<void>((resolve) => {
    pair.server.on('stream', (stream) => {
      stream.pause(); // no credit returned: the client's stream window fills up
      streams.push(stream);
      stream.on('data', (d: Buffer) => (received += d.length));
      stream.on('end', () => resolve());
    });
  });
  const tcp = net.createServer({ allowHalfOpen: true });
  tcp.listen(0, '127.0.101.1');
  await once(tcp, 'listening');
  const accepted = once(tcp, 'connection') as Promise<[net.Socket]>;
  const app = net.connect({ port: (tcp.address() as net.AddressInfo).port, host: '127.0.101.1', allowHalfOpen: true });
  const [appSide] = await accepted;
  const stream = pair.client.connect('127.0.101.1:80');
  const closed = new Promise<void>((resolve) => relay(appSide, stream, () => resolve()));
  // More than the stream window (4 MiB) plus the bound: the window fills, then the stream's queue.
  const payload = Buffer.alloc(DEFAULTS.http2StreamWindowSize + 4 * STREAM_WRITE_BOUND, 0x62);
  const paused = once(appSide, 'pause');
  app.end(payload);
  await paused;
  assert.ok(
    stream.writableLength >= STREAM_WRITE_BOUND,
    `paused with only ${stream.writableLength} bytes queued in the stream`,
  );
  assert.ok(
    stream.writableLength < STREAM_WRITE_BOUND + 64 * 1024,
    `${stream.writableLength} bytes queued in the stream`,
  );
  streams[0]!.resume();
  await allIn;
  assert.equal(received, payload.length);
  streams[0]!.respond(200, [], true);
  stream.resume();
  await closed;
  pair.close();
  tcp.close();
});

test(
  'relay: an HBONE stream reset before the relay began (right after its 200) ends the relay at once: the app socket is reset and the connection reported failed',
  { timeout: 20_000 },
  async () => {
    const pair = await sessionPair('127.0.101.2');
    pair.server.on('stream', (s: H2Stream) => {
      s.on('error', () => undefined);
      s.respond(200);
      s.reset(H2ErrorCode.INTERNAL_ERROR);
    });
    const stream = pair.client.connect('127.0.101.2:80');
    stream.on('error', () => undefined);
    await new Promise((resolve) => stream.once('close', resolve));
    const tcp = net.createServer({ allowHalfOpen: true });
    tcp.listen(0, '127.0.101.2');
    await once(tcp, 'listening');
    const accepted = once(tcp, 'connection') as Promise<[net.Socket]>;
    const app = net.connect({
      port: (tcp.address() as net.AddressInfo).port,
      host: '127.0.101.2',
      allowHalfOpen: true,
    });
    const appEnded = new Promise<string>((resolve) => {
      app.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      app.once('end', () => resolve('fin'));
    });
    const [appSide] = await accepted;
    const error = await new Promise<Error | undefined>((resolve) => relay(appSide, stream, resolve));
    assert.ok(isMeshError(error, 'ZT_ERR_HBONE_CONNECTION_LOST'), String(error));
    assert.match(error.message, /INTERNAL_ERROR/);
    assert.equal(await appEnded, 'ECONNRESET');
    pair.close();
    tcp.close();
  },
);
