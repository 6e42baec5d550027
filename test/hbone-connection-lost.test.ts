import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http2, { type ServerHttp2Session } from 'node:http2';
import net from 'node:net';
import { once } from 'node:events';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { loadZtunnelConfig } from '../src/ztunnel/config.js';
import { serverTlsOptions } from '../src/ztunnel/tls/workload-tls.js';
import { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { meshFixture, waitFor, type MeshFixture } from './helpers/mesh-fixture.js';

const CLIENT_IP = '127.70.2.10';
const PEER_IP = '127.70.2.20';
/** A second address of the peer, reached through a TCP relay the test can freeze. */
const FROZEN_IP = '127.70.0.20';
const CONTROL_IP = '127.70.2.1';
/**
 * ztunnel's HBONE timeouts, shortened so the tests take seconds (ztunnel's own: 10s to connect, PING every 10s, dead
 * after 20s without an ACK): long enough for a TLS handshake on a loaded machine, short enough to wait out.
 */
const CONNECT_TIMEOUT_MS = 2_000;
const KEEPALIVE_INTERVAL_MS = 1_000;
const KEEPALIVE_TIMEOUT_MS = 2_000;
const MESH = `
workloads:
- {uid: c, name: client, namespace: a, serviceAccount: client, workloadIps: [${CLIENT_IP}], protocol: HBONE, node: n1}
- {uid: p, name: peer, namespace: b, serviceAccount: peer, workloadIps: [${PEER_IP}], protocol: HBONE, node: elsewhere}
- {uid: f, name: frozen, namespace: b, serviceAccount: peer, workloadIps: [${FROZEN_IP}], protocol: HBONE, node: elsewhere}
`;

let fx: MeshFixture;
let zt: Ztunnel;
const logs = new CapturedLogs('ztunnel');
let peer: http2.Http2SecureServer;
/** The HBONE peer's live connections: its HTTP/2 sessions and their TCP sockets, newest last. */
const sessions: ServerHttp2Session[] = [];
const sockets: net.Socket[] = [];
/**
 * Relays FROZEN_IP:15008 to the peer. Frozen, it stops moving bytes either way and keeps both TCP connections open:
 * the peer is still there as far as TCP can tell, but answers nothing, PINGs included (a partition, a hung node).
 */
let frozen = false;
const relayed: net.Socket[] = [];
const relay = net.createServer((a) => {
  const b = net.connect(15008, PEER_IP);
  for (const [from, to] of [
    [a, b],
    [b, a],
  ] as const) {
    relayed.push(from);
    from.on('error', () => to.destroy());
    from.on('data', (d: Buffer) => {
      if (!frozen) to.write(d);
    });
    from.on('end', () => to.end());
  }
});

before(async () => {
  fx = await meshFixture();
  await fx.write('mesh.yaml', MESH);
  // A minimal HBONE peer that echoes each CONNECT stream, so the test decides how its connection dies.
  peer = http2.createSecureServer({
    ...serverTlsOptions(await fx.cert('spiffe://cluster.local/ns/b/sa/peer')),
    allowHTTP1: false,
  });
  peer.on('connection', (s: net.Socket) => sockets.push(s));
  peer.on('session', (s) => {
    s.on('error', () => undefined);
    sessions.push(s);
  });
  peer.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    if (String(headers[':authority']).endsWith(':8081')) return;
    stream.respond({ ':status': 200 });
    stream.on('data', (d: Buffer) => stream.write(d));
  });
  await new Promise<void>((r) => peer.listen(15008, PEER_IP, r));
  relay.listen(15008, FROZEN_IP);
  await once(relay, 'listening');
  const config = loadZtunnelConfig(
    {
      localConfig: fx.file('mesh.yaml'),
      localCa: fx.ca,
      adminAddress: `${CONTROL_IP}:0`,
      metricsAddress: `${CONTROL_IP}:0`,
      readinessAddress: `${CONTROL_IP}:0`,
    },
    { NODE_NAME: 'n1', UNSTABLE_ENABLE_SOCKS5: 'true' },
  );
  zt = await Ztunnel.start(
    {
      ...config,
      hboneConnectTimeoutMs: CONNECT_TIMEOUT_MS,
      hboneKeepaliveIntervalMs: KEEPALIVE_INTERVAL_MS,
      hboneKeepaliveTimeoutMs: KEEPALIVE_TIMEOUT_MS,
    },
    logs.control,
  );
  await waitFor('ztunnel ready', () => zt.pending().length === 0);
});

after(async () => {
  await zt.shutdown();
  peer.close();
  relay.close();
  for (const s of relayed) s.destroy();
  await fx.cleanup();
});

/** An app connection through ztunnel to the peer, with one round trip done so its HBONE stream is live. */
async function liveAppConnection(dst = PEER_IP): Promise<net.Socket> {
  const s = await socks5Connect(CLIENT_IP, 15080, dst, 8080, CLIENT_IP);
  s.resume();
  let got = '';
  s.on('data', (d: Buffer) => (got += d.toString()));
  s.write('ping');
  await waitFor('echo over HBONE', () => got === 'ping');
  return s;
}

/** How the app connection ended: 'reset' (RST) or 'fin'. */
function ending(s: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    s.once('error', (e: NodeJS.ErrnoException) =>
      resolve(e.code === 'ECONNRESET' ? 'reset' : `error ${e.code ?? e.message}`),
    );
    s.once('end', () => resolve('fin'));
  });
}

async function failedCount(dst = PEER_IP): Promise<number> {
  const text = await (await fetch(`http://${CONTROL_IP}:${zt.ports.metrics}/metrics`)).text();
  return text
    .split('\n')
    .filter(
      (l) =>
        l.startsWith('istio_tcp_connections_failed_total{') &&
        l.includes('reporter="source"') &&
        l.includes('response_flags="CONNECT"') &&
        l.includes(`destination_workload="${dst === PEER_IP ? 'peer' : 'frozen'}"`),
    )
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** The access log line of the connection from `src` once it completed. */
function completion(src: string): Promise<Record<string, unknown>> {
  return logs.waitFor(
    `access log of the connection from ${src}`,
    (o) => o['scope'] === 'access' && o['message'] === 'connection complete' && o['src.addr'] === src,
  );
}

for (const [how, kill, reason] of [
  [
    'a GOAWAY with an error code',
    (): void => sessions.at(-1)!.goaway(http2.constants.NGHTTP2_INTERNAL_ERROR),
    /the peer ended the connection.*INTERNAL_ERROR/,
  ],
  ['the peer resetting the TCP connection', (): void => void sockets.at(-1)!.resetAndDestroy(), /ECONNRESET/],
] as const) {
  test(`an app connection whose HBONE connection dies by ${how} is reset (RST, not FIN), logged with error= and counted as failed`, async () => {
    const before = await failedCount();
    const app = await liveAppConnection();
    const src = `${app.localAddress ?? ''}:${app.localPort ?? ''}`;
    const ended = ending(app);
    kill();
    assert.equal(await ended, 'reset');
    const entry = await completion(src);
    assert.equal(entry['level'], 'error');
    assert.match(String(entry['error']), /^ZT_ERR_HBONE_CONNECTION_LOST: /);
    assert.match(String(entry['error']), reason);
    await waitFor('failed metric', async () => (await failedCount()) === before + 1);
  });
}

test('a peer that never answers the HBONE CONNECT does not hold the app: the SOCKS5 connect fails after the connect timeout', async () => {
  // The peer answers every CONNECT except those for port 8081.
  await assert.rejects(socks5Connect(CLIENT_IP, 15080, PEER_IP, 8081, CLIENT_IP), /SOCKS5 connect to .* failed/);
  await logs.waitFor('the CONNECT timeout in the log', (o) =>
    /ZT_ERR_HBONE_CONNECT_TIMEOUT: no response to the HBONE CONNECT .* within 2s/.test(JSON.stringify(o)),
  );
});

test(
  'an HBONE connection whose peer stops answering PINGs is torn down by the keepalive: its app connections are reset and logged failed with the reason',
  { timeout: 30_000 },
  async () => {
    const before = await failedCount(FROZEN_IP);
    // Two app connections pooled on one HBONE connection to the peer.
    const apps = [await liveAppConnection(FROZEN_IP), await liveAppConnection(FROZEN_IP)];
    const srcs = apps.map((app) => `${app.localAddress ?? ''}:${app.localPort ?? ''}`);
    const endings = apps.map(ending);
    frozen = true;
    // A PING goes out within an interval and is given up on a timeout later.
    assert.deepEqual(await Promise.all(endings), ['reset', 'reset']);
    for (const src of srcs) {
      const entry = await completion(src);
      assert.equal(entry['level'], 'error');
      assert.match(String(entry['error']), /ZT_ERR_HBONE_CONNECTION_LOST.*no PING acknowledgement within 2s/);
    }
    await waitFor('failed metric', async () => (await failedCount(FROZEN_IP)) === before + 2);
    await logs.waitFor(
      'the keepalive teardown in the log',
      (o) => o['message'] === 'HBONE connection is dead; closing it',
    );
  },
);
