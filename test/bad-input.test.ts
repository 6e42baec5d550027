import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { startEchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { meshFixture, hboneSession, sendAndCollect, waitFor } from './helpers/mesh-fixture.js';
import { startZtunnel } from './helpers/in-process.js';

const MESH = `
workloads:
- {uid: c, name: client, namespace: a, serviceAccount: client, workloadIps: [127.0.33.1], protocol: HBONE, node: n1}
- {uid: s, name: server, namespace: b, serviceAccount: server, workloadIps: [127.0.33.2], protocol: HBONE, node: n1}
`;

async function works(): Promise<void> {
  const s = await socks5Connect('127.0.33.1', 15080, '127.0.33.2', 8080);
  assert.equal((await sendAndCollect(s, 'still alive')).toString(), 'still alive');
}

test('garbage TLS, a stream flood, a silent SOCKS5 client and an invalid config edit neither crash nor disturb other connections', async () => {
  const fx = await meshFixture();
  await fx.write('mesh.yaml', MESH);
  const echo = await startEchoServer('127.0.33.2', 8080);
  const zt = await startZtunnel(fx.file('mesh.yaml'), 'n1', fx.ca, { POOL_UNUSED_RELEASE_TIMEOUT: '1h' });
  try {
    // A live connection that must survive everything below.
    const live = await socks5Connect('127.0.33.1', 15080, '127.0.33.2', 8080);
    live.resume();
    let got = '';
    live.on('data', (d: Buffer) => (got += d.toString()));

    // Garbage instead of a TLS ClientHello.
    const g = net.connect({ host: '127.0.33.2', port: 15008 });
    g.on('error', () => undefined);
    await once(g, 'connect');
    g.write(Buffer.from('GET / HTTP/1.1\r\nHost: not-tls\r\n\r\n'));
    await once(g, 'close');

    // A flood of streams on one HBONE connection: beyond SETTINGS_MAX_CONCURRENT_STREAMS (200) they are refused.
    const cert = await fx.cert('spiffe://cluster.local/ns/a/sa/client');
    const sess = await hboneSession('127.0.33.2', cert, ['spiffe://cluster.local/ns/b/sa/server'], '127.0.33.1');
    const flood = Array.from({ length: 400 }, () => {
      const st = sess.request({ ':method': 'CONNECT', ':authority': '127.0.33.2:8080' }, { endStream: false });
      st.on('error', () => undefined);
      return new Promise<string>((resolve) => {
        st.once('response', () => resolve('ok'));
        st.once('close', () => resolve('closed'));
      });
    });
    const outcomes = await Promise.all(flood.map((p) => Promise.race([p, new Promise<string>((r) => setTimeout(() => r('pending'), 3000))])));
    assert.ok(outcomes.filter((o) => o === 'ok').length <= 200, 'at most 200 concurrent streams accepted');
    sess.destroy();

    // A SOCKS5 client that connects and sends nothing is dropped after the handshake timeout, not held forever.
    const silent = net.connect({ host: '127.0.33.1', port: 15080 });
    silent.on('error', () => undefined);
    await once(silent, 'connect');

    // An invalid config edit is rejected; the last good config stays in force.
    await fx.write('mesh.yaml', MESH + '\n  bogus: [\n');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(zt.ctx.state.workloadByUid('s')?.name, 'server');

    live.write('survived');
    await waitFor('live connection still echoes', () => got === 'survived');
    await works();
    const closed = await Promise.race([once(silent, 'close').then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 12_000))]);
    assert.ok(closed, 'silent SOCKS5 client dropped');
    live.end();
  } finally {
    await zt.shutdown();
    await echo.close();
    await fx.cleanup();
  }
});

test('SIGTERM-style shutdown drains a live connection until CONNECTION_TERMINATION_DEADLINE, then closes it', async () => {
  const fx = await meshFixture();
  await fx.write('mesh.yaml', MESH);
  const echo = await startEchoServer('127.0.33.2', 8080);
  const zt = await startZtunnel(fx.file('mesh.yaml'), 'n1', fx.ca, { CONNECTION_TERMINATION_DEADLINE: '700ms' });
  try {
    const live = await socks5Connect('127.0.33.1', 15080, '127.0.33.2', 8080);
    live.resume();
    live.on('error', () => undefined);
    const start = Date.now();
    const closed = new Promise<number>((resolve) => {
      live.once('end', () => resolve(Date.now()));
      live.once('close', () => resolve(Date.now()));
    });
    const done = zt.shutdown();
    // New connections are refused at once.
    await assert.rejects(socks5Connect('127.0.33.1', 15080, '127.0.33.2', 8080));
    const at = await closed;
    assert.ok(at - start >= 600, `closed after ${at - start}ms, before the deadline`);
    await done;
  } finally {
    await echo.close();
    await fx.cleanup();
  }
});
