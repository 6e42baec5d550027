import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startEchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { hboneSession, meshFixture, requestStatus, sendAndCollect } from './helpers/mesh-fixture.js';
import { startZtunnel } from './helpers/in-process.js';

// The server workload's IP is written the long way on purpose: addresses are compared as text, so the config, the
// SOCKS5 request (16 raw bytes) and the HBONE `:authority` must all arrive at the same canonical form (`::1`).
const MESH = `
workloads:
- {uid: c, name: client, namespace: a, serviceAccount: client, workloadIps: [127.39.0.1], protocol: HBONE, node: n1}
- {uid: s6, name: server6, namespace: b, serviceAccount: server, workloadIps: ['0:0:0:0:0:0:0:1'], protocol: HBONE, node: n1}
`;

/** IPv6 loopback is needed; hosts (or containers) with IPv6 disabled skip, saying so. */
async function ipv6Skip(): Promise<false | string> {
  const probe = net.createServer();
  return new Promise((resolve) => {
    probe.once('error', (e: NodeJS.ErrnoException) =>
      resolve(`no IPv6 loopback (::1) on this host: ${e.code ?? e.message}`),
    );
    probe.listen(0, '::1', () => probe.close(() => resolve(false)));
  });
}

test(
  'an IPv6 workload written in long form is reached over HBONE from an IPv4 client via a SOCKS5 IPv6 request',
  { skip: await ipv6Skip() },
  async () => {
    const fx = await meshFixture();
    await fx.write('mesh.yaml', MESH);
    const echo = await startEchoServer('::1', 0);
    const zt = await startZtunnel(fx.file('mesh.yaml'), 'n1', fx.ca);
    try {
      assert.equal(zt.ctx.state.workloadByAddr('', '::1')?.uid, 's6', 'the config stores the canonical form');
      const s = await socks5Connect('127.39.0.1', 15080, '::1', echo.port, '127.39.0.1');
      assert.equal((await sendAndCollect(s, 'over v6')).toString(), 'over v6');
      const metrics = await (await fetch(`http://127.0.0.1:${zt.ports.metrics}/metrics`)).text();
      const opened = metrics
        .split('\n')
        .find((l) => l.startsWith('istio_tcp_connections_opened_total{') && l.includes('reporter="destination"'));
      assert.ok(
        opened?.includes('destination_workload="server6"'),
        `HBONE reached the IPv6 workload: ${opened ?? 'no destination metric'}`,
      );
      assert.ok(opened?.includes('connection_security_policy="mutual_tls"'));
    } finally {
      await zt.shutdown();
      await echo.close();
      await fx.cleanup();
    }
  },
);

test(
  'a dual-stack workload: a CONNECT names the IP its connection arrived on (400 across families, as ztunnel validate_destination); its IPv6 listener reaches the app over IPv6',
  { skip: await ipv6Skip() },
  async () => {
    const fx = await meshFixture();
    await fx.write(
      'mesh.yaml',
      `
workloads:
- {uid: ds, name: dual, namespace: b, serviceAccount: server, workloadIps: [127.39.0.2, '::1'], protocol: HBONE, node: n1}
`,
    );
    const echo = await startEchoServer('::1', 0); // listens on IPv6 only
    const zt = await startZtunnel(fx.file('mesh.yaml'), 'n1', fx.ca);
    try {
      const cert = await fx.cert('spiffe://cluster.local/ns/a/sa/client');
      const v4 = await hboneSession('127.39.0.2', cert, ['spiffe://cluster.local/ns/b/sa/server']);
      try {
        assert.equal(await requestStatus(v4, { ':method': 'CONNECT', ':authority': `[::1]:${echo.port}` }), 400);
      } finally {
        v4.destroy();
      }
      const v6 = await hboneSession('::1', cert, ['spiffe://cluster.local/ns/b/sa/server']);
      try {
        assert.equal(await requestStatus(v6, { ':method': 'CONNECT', ':authority': `[::1]:${echo.port}` }), 200);
      } finally {
        v6.destroy();
      }
    } finally {
      await zt.shutdown();
      await echo.close();
      await fx.cleanup();
    }
  },
);
