import { test } from 'node:test';
import assert from 'node:assert/strict';
import http2, { type Http2Session, type ServerHttp2Session } from 'node:http2';
import net from 'node:net';
import { once } from 'node:events';
import { startEchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { serverTlsOptions } from '../src/ztunnel/tls/workload-tls.js';
import { meshFixture, sendAndCollect, waitFor } from './helpers/mesh-fixture.js';
import { startZtunnel } from './helpers/in-process.js';

const MESH = `
workloads:
- {uid: c, name: client, namespace: a, serviceAccount: client, workloadIps: [127.35.0.1], protocol: HBONE, node: n1}
- {uid: p, name: peer, namespace: b, serviceAccount: peer, workloadIps: [127.35.0.2], protocol: HBONE, node: elsewhere}
`;

test('a pooled HBONE connection that receives GOAWAY drains its open streams while new streams get a fresh connection', async () => {
  const fx = await meshFixture();
  await fx.write('mesh.yaml', MESH);
  const echo = await startEchoServer('127.35.0.2', 8080);
  // A minimal HBONE peer (Node http2 directly) so the test controls when GOAWAY is sent.
  const cert = await fx.cert('spiffe://cluster.local/ns/b/sa/peer');
  const sessions: ServerHttp2Session[] = [];
  const peer = http2.createSecureServer({ ...serverTlsOptions(cert), allowHTTP1: false });
  peer.on('session', (s) => sessions.push(s));
  peer.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    const [host, port] = String(headers[':authority']).split(':');
    const up = net.connect({ host, port: Number(port) }, () => {
      stream.respond({ ':status': 200 });
      stream.pipe(up);
      up.pipe(stream);
    });
    up.on('error', () => stream.close());
  });
  await new Promise<void>((r) => peer.listen(15008, '127.35.0.2', r));
  const zt = await startZtunnel(fx.file('mesh.yaml'), 'n1', fx.ca);
  try {
    const a = await socks5Connect('127.35.0.1', 15080, '127.35.0.2', 8080, '127.35.0.1');
    a.resume();
    let gotA = '';
    a.on('data', (d: Buffer) => (gotA += d.toString()));
    a.write('before;');
    await waitFor('first echo', () => gotA === 'before;');
    assert.equal(sessions.length, 1);
    (sessions[0] as Http2Session).goaway(http2.constants.NGHTTP2_NO_ERROR);
    await waitFor('pool saw GOAWAY', () => zt.ctx.pool.connectionCount() === 0);
    // New connections dial a fresh HBONE connection...
    const b = await socks5Connect('127.35.0.1', 15080, '127.35.0.2', 8080, '127.35.0.1');
    assert.equal((await sendAndCollect(b, 'fresh')).toString(), 'fresh');
    assert.equal(sessions.length, 2, 'a second HBONE connection was dialed');
    // ...while the stream on the draining one keeps working.
    a.write('after');
    await waitFor('old stream still echoes', () => gotA === 'before;after');
    a.end();
    await once(a, 'end');
  } finally {
    await zt.shutdown();
    for (const s of sessions) s.destroy();
    peer.close();
    await echo.close();
    await fx.cleanup();
  }
});
