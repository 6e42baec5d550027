import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http2, { type ServerHttp2Session } from 'node:http2';
import type net from 'node:net';
import { spawnZtunnel, type ZtunnelProcess } from '../src/demo/ztunnel-process.js';
import { freeControlPorts } from './helpers/free-port.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { serverTlsOptions } from '../src/ztunnel/tls/workload-tls.js';
import { meshFixture, waitFor, type MeshFixture } from './helpers/mesh-fixture.js';

const CLIENT_IP = '127.70.2.10';
const PEER_IP = '127.70.2.20';
const MESH = `
workloads:
- {uid: c, name: client, namespace: a, serviceAccount: client, workloadIps: [${CLIENT_IP}], protocol: HBONE, node: n1}
- {uid: p, name: peer, namespace: b, serviceAccount: peer, workloadIps: [${PEER_IP}], protocol: HBONE, node: elsewhere}
`;

let fx: MeshFixture;
let zt: ZtunnelProcess;
let peer: http2.Http2SecureServer;
/** The HBONE peer's live connections: its HTTP/2 sessions and their TCP sockets, newest last. */
const sessions: ServerHttp2Session[] = [];
const sockets: net.Socket[] = [];

before(async () => {
  fx = await meshFixture();
  await fx.write('mesh.yaml', MESH);
  // A minimal HBONE peer that echoes each CONNECT stream, so the test decides how its connection dies.
  peer = http2.createSecureServer({ ...serverTlsOptions(await fx.cert('spiffe://cluster.local/ns/b/sa/peer')), allowHTTP1: false });
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
  zt = spawnZtunnel({ localConfig: fx.file('mesh.yaml'), nodeName: 'n1', localCa: fx.ca, controlIp: '127.70.2.1', controlPorts: await freeControlPorts('127.70.2.1'), env: { UNSTABLE_ENABLE_SOCKS5: 'true', LOG_FORMAT: 'json' } });
  await zt.waitReady();
});

after(async () => {
  await zt.stop();
  peer.close();
  await fx.cleanup();
});

/** An app connection through ztunnel to the peer, with one round trip done so its HBONE stream is live. */
async function liveAppConnection(): Promise<net.Socket> {
  const s = await socks5Connect(CLIENT_IP, 15080, PEER_IP, 8080, CLIENT_IP);
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
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNRESET' ? 'reset' : `error ${e.code ?? e.message}`));
    s.once('end', () => resolve('fin'));
  });
}

async function failedCount(): Promise<number> {
  const text = await (await fetch(`http://${zt.metrics}/metrics`)).text();
  return text.split('\n')
    .filter((l) => l.startsWith('istio_tcp_connections_failed_total{') && l.includes('reporter="source"') && l.includes('response_flags="CONNECT"'))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** The access log line of the connection from `src` once it completed. */
async function completion(src: string): Promise<Record<string, unknown>> {
  let entry: Record<string, unknown> | undefined;
  await waitFor('access log of the connection', () => {
    entry = zt.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((o) => o['scope'] === 'access' && o['message'] === 'connection complete' && o['src.addr'] === src);
    return entry !== undefined;
  });
  return entry!;
}

for (const [how, kill] of [
  ['a GOAWAY with an error code', (): void => sessions.at(-1)!.goaway(http2.constants.NGHTTP2_INTERNAL_ERROR)],
  ['the peer resetting the TCP connection', (): void => void sockets.at(-1)!.resetAndDestroy()],
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
    assert.match(String(entry['error']), /ZT_ERR_HBONE_CONNECTION_LOST|ERR_HTTP2_SESSION_ERROR|ECONNRESET/);
    await waitFor('failed metric', async () => (await failedCount()) === before + 1);
  });
}

test('a peer that never answers the HBONE CONNECT does not hold the app: the SOCKS5 connect fails after the connect timeout', async () => {
  // The peer answers every CONNECT except those for port 8081.
  await assert.rejects(socks5Connect(CLIENT_IP, 15080, PEER_IP, 8081, CLIENT_IP), /SOCKS5 connect to .* failed/);
  assert.match(zt.output(), /ZT_ERR_HBONE_CONNECT_TIMEOUT: no response to the HBONE CONNECT/);
});
