import { test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { once } from 'node:events';
import { CertificateAuthority, issueServingCertificate } from '../../lib/pki/certificate-authority.js';
import { relay, STREAM_WRITE_BOUND } from './relay.js';
import { APP_SOCKET_OPTIONS } from './socket-factory.js';

const FRAME = 16384;

/** An HTTP/2-over-TLS server whose streams are relayed into a counting TCP sink, as ztunnel's inbound does. */
async function relayThroughTls(payload: Buffer, appOptions: net.SocketConstructorOpts = {}): Promise<{ received: number; appWrites: number }> {
  const ca = await CertificateAuthority.selfSigned('cluster.local');
  const { keyPem, chain } = await issueServingCertificate(ca, ['localhost'], 3600);
  let received = 0;
  const sink = net.createServer((s) => s.on('data', (d: Buffer) => (received += d.length)));
  sink.listen(0, '127.0.0.1');
  await once(sink, 'listening');
  const server = http2.createSecureServer({ key: keyPem, cert: chain.slice(0, -1).join(''), minVersion: 'TLSv1.3' });
  let appWrites = 0;
  const relayed = new Promise<void>((resolve) => {
    server.on('stream', (stream) => {
      const app = new net.Socket(appOptions).connect((sink.address() as net.AddressInfo).port, '127.0.0.1');
      // Count what the relay hands the socket: one call per write syscall it will make.
      const write = app._write.bind(app);
      const writev = app._writev!.bind(app);
      app._write = (c, e, cb): void => (appWrites++, write(c, e, cb));
      app._writev = (cs, cb): void => (appWrites++, writev(cs, cb));
      stream.respond({ ':status': 200 });
      relay(stream, app, () => resolve());
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client = http2.connect(`https://localhost:${(server.address() as net.AddressInfo).port}`, { ca: chain.at(-1), settings: { initialWindowSize: 4 << 20 } });
  const req = client.request({ ':method': 'POST', ':path': '/' });
  req.resume();
  req.end(payload);
  await relayed;
  client.close();
  server.close();
  sink.close();
  return { received, appWrites };
}

test('relay: HBONE DATA frames that straddle TLS records reach the app in one write each, not two', async (t) => {
  const payload = Buffer.alloc(64 * FRAME, 0x61);
  const { received, appWrites } = await relayThroughTls(payload);
  assert.equal(received, payload.length);
  t.diagnostic(`${appWrites} app writes for 64 frames`);
  // A 16 KiB DATA frame plus its 9-byte header spans two TLS records, so Node delivers it in two pieces.
  // Unbatched, that is about two writes per frame; batched, about one.
  assert.ok(appWrites <= 64 * 1.25, `the app socket saw ${appWrites} writes for 64 frames`);
});

test('relay: into an app-facing socket (ztunnel\'s buffer), the DATA frames of one loop turn leave in one write', async (t) => {
  const payload = Buffer.alloc(64 * FRAME, 0x61);
  const { received, appWrites } = await relayThroughTls(payload, APP_SOCKET_OPTIONS);
  assert.equal(received, payload.length);
  t.diagnostic(`${appWrites} app writes for 64 frames`);
  // With Node's 16 KiB socket buffer, pipe stops the stream after each frame: one write per frame at best.
  assert.ok(appWrites < 64, `the app socket saw ${appWrites} writes for 64 frames`);
});

test('relay: an app socket is read on while its HBONE stream holds less than STREAM_WRITE_BOUND, paused beyond it, and every byte arrives', async () => {
  const server = http2.createServer();
  let received = 0;
  const streams: http2.ServerHttp2Stream[] = [];
  const allIn = new Promise<void>((resolve) => {
    server.on('stream', (stream) => {
      stream.pause(); // no window granted: the client's stream fills up
      streams.push(stream);
      stream.on('data', (d: Buffer) => (received += d.length));
      stream.on('end', () => resolve());
    });
  });
  server.listen(0, '127.0.101.1');
  await once(server, 'listening');
  const client = http2.connect(`http://127.0.101.1:${(server.address() as net.AddressInfo).port}`);
  const tcp = net.createServer({ allowHalfOpen: true });
  tcp.listen(0, '127.0.101.1');
  await once(tcp, 'listening');
  const accepted = once(tcp, 'connection') as Promise<[net.Socket]>;
  const app = net.connect({ port: (tcp.address() as net.AddressInfo).port, host: '127.0.101.1', allowHalfOpen: true });
  const [appSide] = await accepted;
  const stream = client.request({ ':method': 'POST', ':path': '/' });
  const closed = new Promise<void>((resolve) => relay(appSide, stream, () => resolve()));
  const payload = Buffer.alloc(4 * STREAM_WRITE_BOUND, 0x62);
  const paused = once(appSide, 'pause');
  app.end(payload);
  await paused;
  assert.ok(stream.writableLength >= STREAM_WRITE_BOUND, `paused with only ${stream.writableLength} bytes queued in the stream`);
  assert.ok(stream.writableLength < STREAM_WRITE_BOUND + 64 * 1024, `${stream.writableLength} bytes queued in the stream`);
  streams[0]!.resume();
  await allIn;
  assert.equal(received, payload.length);
  streams[0]!.respond({ ':status': 200 }, { endStream: true });
  stream.resume();
  await closed;
  client.close();
  server.close();
  tcp.close();
});
