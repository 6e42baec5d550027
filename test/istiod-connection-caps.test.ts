import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type { Istiod } from '../src/istiod/istiod.js';
import { startIstiod } from './helpers/in-process.js';
import { waitFor } from './helpers/mesh-fixture.js';

/** istiod's 15012 under a connection flood from one source, with small caps so the test sees them act. */
const ISTIOD_IP = '127.77.0.40';
const FLOODER_IP = '127.77.0.41';
const OTHER_IP = '127.77.0.42';
const LIMITS = { maxConnections: 8, maxConnectionsPerSource: 2, refusedLogIntervalMs: 1_000 };
/** Far more than either cap. */
const FLOOD = 60;
const REFUSED = 'connection refused: too many connections';

let dir: string;
let ist: Istiod;
let root: string;
const refusals: Record<string, unknown>[] = [];

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'amesh-connection-caps-'));
  const log = (text: string): void => {
    for (const l of text.split('\n').filter((x) => x.startsWith('{'))) {
      const line = JSON.parse(l) as Record<string, unknown>;
      if (line['message'] !== REFUSED) continue;
      refusals.push(line);
    }
  };
  ist = await startIstiod(dir, path.join(dir, 'state'), { host: ISTIOD_IP, log, grpcLimits: LIMITS });
  root = await readFile(ist.rootCertPath, 'utf8');
});
after(async () => {
  await ist.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Refusals logged so far, summed over lines: how many connections, from which peers. */
function refusedSoFar(): { dropped: number; peers: Record<string, number> } {
  const peers: Record<string, number> = {};
  let dropped = 0;
  for (const l of refusals) {
    dropped += Number(l['dropped']);
    for (const [p, n] of Object.entries(l['peers'] as Record<string, number>)) peers[p] = (peers[p] ?? 0) + n;
  }
  return { dropped, peers };
}

test('a flood from one source is capped per source: another source still connects, and the refusals cost a bounded number of log lines that count them', async () => {
  const flood = await Promise.all(
    Array.from({ length: FLOOD }, async () => {
      const s = net.connect({ host: ISTIOD_IP, port: ist.ports.grpc, localAddress: FLOODER_IP });
      s.on('error', () => undefined);
      await once(s, 'connect');
      return s;
    }),
  );
  const started = Date.now();
  try {
    // Connections past the per-source cap are closed at accept; the cap's worth stay open.
    const refused = FLOOD - LIMITS.maxConnectionsPerSource;
    await waitFor(
      `${refused} of the flood's connections closed`,
      () => flood.filter((s) => s.destroyed).length >= refused,
      10_000,
    );
    assert.equal(flood.filter((s) => !s.destroyed).length, LIMITS.maxConnectionsPerSource);
    // Another source is served: its TLS handshake completes.
    const other = tls.connect({
      socket: net.connect({ host: ISTIOD_IP, port: ist.ports.grpc, localAddress: OTHER_IP }),
      ca: root,
      servername: 'istiod.istio-system.svc',
      ALPNProtocols: ['h2'],
    });
    await once(other, 'secureConnect');
    other.destroy();
    // Every refusal is counted, in a line logged at once and one summary at the end of the interval.
    await waitFor(`${refused} refusals logged`, () => refusedSoFar().dropped >= refused, 10_000);
    const elapsed = Date.now() - started;
    assert.deepEqual(refusedSoFar(), { dropped: refused, peers: { [FLOODER_IP]: refused } });
    assert.ok(
      refusals.length <= 2 + Math.floor(elapsed / LIMITS.refusedLogIntervalMs),
      `${refusals.length} log lines for ${refused} refusals in ${elapsed}ms`,
    );
    assert.deepEqual(refusals.at(-1)?.['reasons'], { 'per source': Number(refusals.at(-1)?.['dropped']) });
  } finally {
    for (const s of flood) s.destroy();
  }
});
