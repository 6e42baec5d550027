import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { startEchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { loadZtunnelConfig } from '../src/ztunnel/config.js';
import { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { meshFixture, sendAndCollect, waitFor } from './helpers/mesh-fixture.js';
import { CapturedLogs } from './helpers/captured-logs.js';

const CLIENT_IP = '127.79.1.1';
const SERVER_IP = '127.79.1.2';
/** Another local process on the node: not the workload. */
const STRANGER_IP = '127.79.1.9';
const MESH = `
workloads:
- {uid: c, name: client, namespace: a, serviceAccount: client, workloadIps: [${CLIENT_IP}], protocol: HBONE, node: n1}
- {uid: s, name: server, namespace: b, serviceAccount: server, workloadIps: [${SERVER_IP}], protocol: HBONE, node: n1}
`;

async function withZtunnel(
  env: Record<string, string>,
  body: (zt: Ztunnel, logs: CapturedLogs) => Promise<void>,
): Promise<void> {
  const fx = await meshFixture();
  await fx.write('mesh.yaml', MESH);
  const logs = new CapturedLogs('ztunnel');
  const cfg = loadZtunnelConfig(
    {
      localConfig: fx.file('mesh.yaml'),
      localCa: fx.ca,
      adminAddress: '127.79.0.1:0',
      metricsAddress: '127.79.0.1:0',
      readinessAddress: '127.79.0.1:0',
    },
    { NODE_NAME: 'n1', ...env },
  );
  const zt = await Ztunnel.start(cfg, logs.control);
  try {
    await waitFor('workload proxies up', () => zt.pending().length === 0, 10_000);
    await body(zt, logs);
  } finally {
    await zt.shutdown();
    await fx.cleanup();
  }
}

/** Connects and reports whether the server refused, or accepted and then closed without sending a byte. */
async function dial(host: string, port: number, localAddress: string): Promise<'refused' | { closedWith: number }> {
  const s = net.connect({ host, port, localAddress });
  s.on('data', () => undefined);
  try {
    await once(s, 'connect');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ECONNREFUSED') return 'refused';
    throw e;
  }
  s.write(Buffer.from([0x05, 0x01, 0x00]));
  let got = 0;
  s.on('data', (d: Buffer) => (got += d.length));
  s.on('error', () => undefined);
  await once(s, 'close');
  return { closedWith: got };
}

test('SOCKS5 is off by default, as in ztunnel: nothing listens on <workload IP>:15080', async () => {
  await withZtunnel({}, async (zt) => {
    assert.equal(zt.config.enableSocks5, false);
    assert.equal(await dial(CLIENT_IP, 15080, CLIENT_IP), 'refused');
    // The workload itself is up: its HBONE port listens.
    const hbone = net.connect({ host: CLIENT_IP, port: 15008 });
    await once(hbone, 'connect');
    hbone.destroy();
  });
});

test('with UNSTABLE_ENABLE_SOCKS5=true a client from another address is closed without a SOCKS5 reply and logged; the workload itself is served', async () => {
  const echo = await startEchoServer(SERVER_IP, 8080);
  try {
    await withZtunnel({ UNSTABLE_ENABLE_SOCKS5: 'true' }, async (_zt, logs) => {
      assert.deepEqual(
        await dial(CLIENT_IP, 15080, STRANGER_IP),
        { closedWith: 0 },
        'no SOCKS5 byte goes back to a stranger',
      );
      const line = await logs.waitFor('SOCKS5 refusal', (l) => l['message'] === 'SOCKS5 client refused');
      assert.equal(line['level'], 'warn');
      assert.equal(line['workload'], 'c');
      assert.equal(line['src'], STRANGER_IP);
      assert.match(String(line['error']), /^ZT_ERR_SOCKS5_FOREIGN_CLIENT: /);
      // A stranger cannot get through even with a well-formed request.
      await assert.rejects(
        socks5Connect(CLIENT_IP, 15080, SERVER_IP, 8080, STRANGER_IP),
        /closed the connection during the handshake|ECONNRESET/,
      );
      const own = await socks5Connect(CLIENT_IP, 15080, SERVER_IP, 8080, CLIENT_IP);
      assert.equal((await sendAndCollect(own, 'as the workload')).toString(), 'as the workload');
    });
  } finally {
    await echo.close();
  }
});
