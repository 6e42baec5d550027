import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import type net from 'node:net';
import { spawnZtunnel, type ZtunnelProcess } from '../src/demo/ztunnel-process.js';
import { freeControlPorts } from './helpers/free-port.js';
import { startEchoServer, type EchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { meshFixture, type MeshFixture } from './helpers/mesh-fixture.js';

const CLIENT_IP = '127.76.0.1';
const SERVER_IP = '127.76.0.2';
const MESH = `
workloads:
- {uid: c, name: client, namespace: a, serviceAccount: client, workloadIps: [${CLIENT_IP}], protocol: HBONE, node: n1}
- {uid: s, name: server, namespace: b, serviceAccount: server, workloadIps: [${SERVER_IP}], protocol: HBONE, node: n2}
`;

const PACED_STREAMS = 50;
const PACED_CHUNK = 8 * 1024;
const PACED_INTERVAL_MS = 50;
/**
 * The load's shape (the one that stalled node:http2, docs/performance-log.md "The stall"): bulk echoes start this
 * long after the paced streams.
 */
const BULK_DELAY_MS = 500;
const BULK_STREAMS = 100;
const BULK_BYTES = 1024 * 1024;
const ROUNDS = 4;
/** Keepalive PINGs go every 10 s: a connection where nothing moves for this long has stalled. */
const STALL_MS = 5000;

/** Bytes received so far by all the connections of a round, to tell a stall from slow progress. */
interface Tally {
  received: number;
  /** Every client socket of the round, torn down if the round fails. */
  readonly sockets: Set<net.Socket>;
}

function hashOf(chunks: Buffer[]): string {
  const h = createHash('sha256');
  for (const c of chunks) h.update(c);
  return h.digest('hex');
}

/** Collects what the echo returns until it half-closes. */
function collect(s: net.Socket, tally: Tally): Promise<Buffer[]> {
  tally.sockets.add(s);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    s.on('data', (d: Buffer) => {
      chunks.push(d);
      tally.received += d.length;
    });
    s.once('error', reject);
    s.once('end', () => resolve(chunks));
    s.resume();
  });
}

async function bulkEcho(tally: Tally): Promise<boolean> {
  const s = await socks5Connect(CLIENT_IP, 15080, SERVER_IP, 8080, CLIENT_IP);
  const payload = randomBytes(BULK_BYTES);
  const back = collect(s, tally);
  s.end(payload);
  return hashOf(await back) === hashOf([payload]);
}

async function pacedEcho(tally: Tally, until: Promise<unknown>): Promise<boolean> {
  const s = await socks5Connect(CLIENT_IP, 15080, SERVER_IP, 8080, CLIENT_IP);
  const sent: Buffer[] = [];
  const back = collect(s, tally);
  let done = false;
  void until.finally(() => (done = true));
  while (!done) {
    const chunk = randomBytes(PACED_CHUNK);
    sent.push(chunk);
    s.write(chunk);
    await new Promise((r) => setTimeout(r, PACED_INTERVAL_MS));
  }
  s.end();
  return hashOf(await back) === hashOf(sent);
}

/** Rejects when no connection has received a byte for STALL_MS; stops watching once `work` settles. */
function stallWatch(tally: Tally, work: Promise<unknown>): Promise<never> {
  return new Promise((_, reject) => {
    let last = -1;
    const timer = setInterval(() => {
      if (tally.received === last)
        reject(new Error(`stalled: no byte received for ${STALL_MS / 1000}s (${tally.received} bytes so far)`));
      last = tally.received;
    }, STALL_MS);
    void work.finally(() => clearInterval(timer)).catch(() => undefined);
  });
}

let fx: MeshFixture;
let echo: EchoServer;
let z1: ZtunnelProcess;
let z2: ZtunnelProcess;

before(async () => {
  fx = await meshFixture();
  await fx.write('mesh.yaml', MESH);
  echo = await startEchoServer(SERVER_IP, 8080);
  // Istio's windows (4 MiB a stream, 16 MiB a connection, 1 MiB frames) are the defaults; nothing is overridden.
  const env = { UNSTABLE_ENABLE_SOCKS5: 'true' };
  z1 = spawnZtunnel({
    localConfig: fx.file('mesh.yaml'),
    nodeName: 'n1',
    localCa: fx.ca,
    controlIp: '127.76.1.1',
    controlPorts: await freeControlPorts('127.76.1.1'),
    env,
  });
  z2 = spawnZtunnel({
    localConfig: fx.file('mesh.yaml'),
    nodeName: 'n2',
    localCa: fx.ca,
    controlIp: '127.76.1.2',
    controlPorts: await freeControlPorts('127.76.1.2'),
    env,
  });
  await Promise.all([z1.waitReady(), z2.waitReady()]);
});

after(async () => {
  await Promise.all([z1.stop(), z2.stop()]);
  await echo.close();
  await fx.cleanup();
});

test('HBONE with Istio windows under mixed load (paced streams, then 100 concurrent 1 MiB echoes) never stalls and loses no byte', async () => {
  for (let round = 1; round <= ROUNDS; round++) {
    const tally: Tally = { received: 0, sockets: new Set() };
    let bulkDone!: () => void;
    const bulkFinished = new Promise<void>((r) => (bulkDone = r));
    const paced = Array.from({ length: PACED_STREAMS }, () => pacedEcho(tally, bulkFinished));
    await new Promise((r) => setTimeout(r, BULK_DELAY_MS));
    const bulk = Array.from({ length: BULK_STREAMS }, () => bulkEcho(tally));
    const bulkSettled = Promise.all(bulk).finally(bulkDone);
    const all = Promise.all([bulkSettled, Promise.all(paced)]);
    all.catch(() => undefined);
    let bulkOk: boolean[];
    let pacedOk: boolean[];
    try {
      [bulkOk, pacedOk] = await Promise.race([all, stallWatch(tally, all)]);
    } finally {
      bulkDone();
      for (const s of tally.sockets) s.destroy();
    }
    assert.equal(bulkOk.filter(Boolean).length, BULK_STREAMS, `round ${round}: bulk echoes intact`);
    assert.equal(pacedOk.filter(Boolean).length, PACED_STREAMS, `round ${round}: paced echoes intact`);
  }
});
