import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startEchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { meshFixture, sendAndCollect } from './helpers/mesh-fixture.js';
import { startZtunnel } from './helpers/in-process.js';

test('a service backed by a hostname-only workload is reached through DNS (ztunnel `src/proxy/outbound.rs`)', async () => {
  const fx = await meshFixture();
  const echo = await startEchoServer('127.0.0.1', 0);
  await fx.write(
    'mesh.yaml',
    `
workloads:
- {uid: c, name: client, namespace: a, workloadIps: [127.38.0.1], protocol: HBONE, node: n1}
- {uid: ext, name: ext, namespace: b, hostname: localhost, protocol: TCP, services: {b/ext.b: {80: ${echo.port}}}}
services:
- {name: ext, namespace: b, hostname: ext.b, vips: [/10.96.38.1], ports: {80: ${echo.port}}}
`,
  );
  const zt = await startZtunnel(fx.file('mesh.yaml'), 'n1', fx.ca);
  try {
    const s = await socks5Connect('127.38.0.1', 15080, '10.96.38.1', 80, '127.38.0.1');
    assert.equal((await sendAndCollect(s, 'resolved')).toString(), 'resolved');
  } finally {
    await zt.shutdown();
    await echo.close();
    await fx.cleanup();
  }
});
