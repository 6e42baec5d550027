import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { startEchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { meshFixture, sendAndCollect, waitFor } from './helpers/mesh-fixture.js';
import { startZtunnel } from './helpers/in-process.js';

const MESH = `
workloads:
- {uid: c, name: client, namespace: a, serviceAccount: client, workloadIps: [127.31.0.1], protocol: HBONE, node: n1}
- {uid: s, name: server, namespace: b, serviceAccount: server, workloadIps: [127.31.0.2], protocol: HBONE, node: n2}
`;

interface Dump {
  certificates: { identity: string; state: string; certChain: { serialNumber: string }[]; rootCerts: unknown[] }[];
}

test(
  'certificate rotation at half-life under an open connection drops nothing, and new connections use the new certificate',
  { timeout: 60_000 },
  async () => {
    const fx = await meshFixture();
    await fx.write('mesh.yaml', MESH);
    const echo = await startEchoServer('127.31.0.2', 8080);
    // 4s certificates, backdated 2 min by the CA: each is refreshed halfway through what is left of it on arrival.
    const z1 = await startZtunnel(fx.file('mesh.yaml'), 'n1', fx.ca, {
      SECRET_TTL: '4s',
      POOL_UNUSED_RELEASE_TIMEOUT: '300ms',
    });
    const z2 = await startZtunnel(fx.file('mesh.yaml'), 'n2', fx.ca, { SECRET_TTL: '4s' });
    try {
      const serial = (zt: typeof z1, id: string): string | undefined =>
        (zt.dump() as Dump).certificates.find((c) => c.identity === id)?.certChain[0]?.serialNumber;
      const clientId = 'spiffe://cluster.local/ns/a/sa/client';
      const serverId = 'spiffe://cluster.local/ns/b/sa/server';
      const first = { c: serial(z1, clientId), s: serial(z2, serverId) };
      assert.ok(first.c !== undefined && first.s !== undefined);
      const s = await socks5Connect('127.31.0.1', 15080, '127.31.0.2', 8080, '127.31.0.1');
      s.resume();
      let echoed = '';
      s.on('data', (d: Buffer) => (echoed += d.toString()));
      let sent = '';
      // Ping-pong until both sides have rotated, then a little more: each message waits for its echo, so the one
      // connection carries traffic before, across and after the rotation.
      const rotated = (): boolean => serial(z1, clientId) !== first.c && serial(z2, serverId) !== first.s;
      let after = 0;
      for (let i = 0; after < 20; i++) {
        if (rotated()) after++;
        const msg = `m${i};`;
        sent += msg;
        s.write(msg);
        while (echoed.length < sent.length) await once(s, 'data');
      }
      s.end();
      await once(s, 'end');
      assert.equal(echoed, sent, 'every byte echoed across the rotation');
      assert.equal((z1.dump() as Dump).certificates[0]!.state, 'Available');
      // Once the old HBONE connection is released, a new one handshakes with the rotated certificates.
      await waitFor('old HBONE connection released', () => z1.ctx.pool.connectionCount() === 0);
      const s2 = await socks5Connect('127.31.0.1', 15080, '127.31.0.2', 8080, '127.31.0.1');
      assert.equal((await sendAndCollect(s2, 'after')).toString(), 'after');
    } finally {
      await Promise.all([z1.shutdown(), z2.shutdown()]);
      await echo.close();
      await fx.cleanup();
    }
  },
);
