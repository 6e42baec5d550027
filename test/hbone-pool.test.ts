import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import { once } from 'node:events';
import { startEchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { DEFAULTS } from '../src/ztunnel/config.js';
import { meshFixture, sendAndCollect } from './helpers/mesh-fixture.js';
import { startZtunnel } from './helpers/in-process.js';
import { CapturedLogs } from './helpers/captured-logs.js';

const MESH = `
workloads:
- {uid: c, name: client, namespace: a, serviceAccount: client, workloadIps: [127.30.0.1], protocol: HBONE, node: n1}
- {uid: s, name: server, namespace: b, serviceAccount: server, workloadIps: [127.30.0.2], protocol: HBONE, node: n2, services: {b/svc.b: {80: 8080}}}
services:
- {name: svc, namespace: b, hostname: svc.b, vips: [/10.96.30.1], ports: {80: 8080}}
`;

const CONNECTIONS = 1000;
const BYTES_EACH = 16 * 1024;

async function exchange(s: net.Socket, data: Buffer): Promise<string> {
  return createHash('sha256')
    .update(await sendAndCollect(s, data))
    .digest('hex');
}

test('1000 concurrent connections between one pair of workloads share at most 10 HBONE connections, and every byte arrives', async () => {
  const fx = await meshFixture();
  await fx.write('mesh.yaml', MESH);
  const echo = await startEchoServer('127.30.0.2', 8080);
  const z1 = await startZtunnel(fx.file('mesh.yaml'), 'n1', fx.ca);
  const z2 = await startZtunnel(fx.file('mesh.yaml'), 'n2', fx.ca);
  try {
    // Open them all first, so all 1000 streams are live at once.
    const socks = await Promise.all(
      Array.from({ length: CONNECTIONS }, () => socks5Connect('127.30.0.1', 15080, '10.96.30.1', 80, '127.30.0.1')),
    );
    const peak = z1.ctx.pool.connectionCount();
    const payloads = socks.map(() => randomBytes(BYTES_EACH));
    const hashes = await Promise.all(socks.map((s, i) => exchange(s, payloads[i]!)));
    hashes.forEach((h, i) =>
      assert.equal(h, createHash('sha256').update(payloads[i]!).digest('hex'), `connection ${i} corrupted`),
    );
    assert.ok(peak >= 1 && peak <= 10, `${peak} HBONE connections for ${CONNECTIONS} streams`);
    assert.equal(peak, CONNECTIONS / 100, 'streams are packed 100 per connection');
  } finally {
    await Promise.all([z1.shutdown(), z2.shutdown()]);
    await echo.close();
    await fx.cleanup();
  }
});

test('an idle pooled connection is released after POOL_UNUSED_RELEASE_TIMEOUT and a new one is dialed on demand', async () => {
  const fx = await meshFixture();
  await fx.write('mesh.yaml', MESH);
  const echo = await startEchoServer('127.30.0.2', 8080);
  const logs = new CapturedLogs('ztunnel', 'debug');
  const z1 = await startZtunnel(
    fx.file('mesh.yaml'),
    'n1',
    fx.ca,
    { POOL_UNUSED_RELEASE_TIMEOUT: '200ms' },
    { logs: logs.control },
  );
  const z2 = await startZtunnel(fx.file('mesh.yaml'), 'n2', fx.ca);
  try {
    await exchange(await socks5Connect('127.30.0.1', 15080, '10.96.30.1', 80, '127.30.0.1'), Buffer.from('a'));
    assert.equal(z1.ctx.pool.connectionCount(), 1);
    await logs.waitFor('the unused connection closed', (l) => l['message'] === 'closing unused HBONE connection');
    assert.equal(
      await exchange(await socks5Connect('127.30.0.1', 15080, '10.96.30.1', 80, '127.30.0.1'), Buffer.from('b')),
      createHash('sha256').update('b').digest('hex'),
    );
  } finally {
    await Promise.all([z1.shutdown(), z2.shutdown()]);
    await echo.close();
    await fx.cleanup();
  }
});

test('an app that stops reading stalls only its own stream: other streams on the same HBONE connection keep flowing', async () => {
  const fx = await meshFixture();
  await fx.write('mesh.yaml', MESH);
  const echo = await startEchoServer('127.30.0.2', 8080);
  // An app that accepts and never reads: its stream's flow-control window fills and stays full.
  const stuck: net.Socket[] = [];
  const stalled = net.createServer((s) => {
    s.pause();
    stuck.push(s);
  });
  await new Promise<void>((r) => stalled.listen(8081, '127.30.0.2', r));
  const z1 = await startZtunnel(fx.file('mesh.yaml'), 'n1', fx.ca);
  const z2 = await startZtunnel(fx.file('mesh.yaml'), 'n2', fx.ca);
  try {
    const writer = await socks5Connect('127.30.0.1', 15080, '127.30.0.2', 8081, '127.30.0.1');
    writer.on('error', () => undefined);
    const probe = async (): Promise<void> => {
      const s = await socks5Connect('127.30.0.1', 15080, '127.30.0.2', 8080, '127.30.0.1');
      assert.equal((await sendAndCollect(s, 'not blocked')).toString(), 'not blocked');
    };
    // Write more than the stream window (4 MiB) through, then keep writing until the path pushes back. Each time it
    // does, a second stream to the same workload must complete; once it completes with the writer still held back
    // (no 'drain' meanwhile), the stalled stream is full and the other stream flowed past it.
    const chunk = Buffer.alloc(256 * 1024, 0x7a);
    let written = 0;
    for (;;) {
      while (writer.write(chunk)) written += chunk.length;
      written += chunk.length;
      assert.ok(written < 64 * 1024 * 1024, 'the stalled stream never pushed back');
      if (written <= DEFAULTS.http2StreamWindowSize) {
        await once(writer, 'drain');
        continue;
      }
      let drained = false;
      const onDrain = (): void => {
        drained = true;
      };
      writer.once('drain', onDrain);
      await probe();
      if (!drained) break;
    }
    assert.equal(z1.ctx.pool.connectionCount(), 1, 'both streams share one HBONE connection');
    writer.destroy();
  } finally {
    for (const s of stuck) s.destroy();
    stalled.close();
    await Promise.all([z1.shutdown(), z2.shutdown()]);
    await echo.close();
    await fx.cleanup();
  }
});
