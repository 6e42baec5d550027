/**
 * `BENCH_PATHS=idle npm run bench`: the idle-connection footprint, whose target is 10,000 idle connections in under
 * 600 MiB for both ztunnels with every byte intact. Two ztunnels as the amesh path runs them (SOCKS5 -> ztunnel ->
 * HBONE -> ztunnel -> echo app), then BENCH_IDLE_CONNECTIONS (10,000) app connections opened through them with
 * bounded concurrency and held idle; once the echo app has accepted every one, both ztunnels' RSS is read. Then
 * every connection carries its own payload and each echo is compared byte for byte.
 *
 * Each process here (load generator, echo app, both ztunnels) holds one socket per connection, so each is started
 * with RLIMIT_NOFILE raised through prlimit; above the hard limit that needs root with CAP_SYS_RESOURCE, and
 * without it the bench says so and goes as far as the current limit allows.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { writePluginCaDir } from '../src/lib/pki/certificate-authority.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { SOCKS5_PORT } from '../src/lib/istio-ports.js';
import { render } from '../src/lib/table.js';
import { currentRssMiB, rssMiB } from './proc-stats.js';
import { idleConnectionTargets, renderTargets } from './performance-targets.js';
import { startZtunnelPair } from './ztunnel-pair.js';
import { writeResults } from './write-results.js';

const CLIENT_IP = '127.0.42.11';
const APP_IP = '127.0.42.12';
const CONTROL_IPS = ['127.0.42.21', '127.0.42.22'] as const;
const ECHO_PORT = 9000;
const CONNECTIONS = Math.max(1, Number(process.env['BENCH_IDLE_CONNECTIONS'] ?? 10_000) || 10_000);
/** Dials in flight while opening: enough to keep both ztunnels busy on 2 cores without a SYN backlog overflow. */
const OPEN_CONCURRENCY = 64;
/** Bytes each connection carries once all are open; distinct per connection. */
const PAYLOAD_BYTES = 1024;
/** Seconds the connections stay open and idle before they carry data (BENCH_IDLE_HOLD_S; e.g. to take a heap snapshot). */
const HOLD_SECONDS = Math.max(0, Number(process.env['BENCH_IDLE_HOLD_S'] ?? 0) || 0);
/** Longest wait for every echo once the payloads are sent. */
const ECHO_TIMEOUT_MS = 120_000;
/** File descriptors for each process: one socket per connection, and room for the rest (TLS, listeners, files). */
const NOFILE = CONNECTIONS + 1024;

export interface IdleConnectionsResult {
  readonly connections: number;
  readonly established: number;
  readonly setupSeconds: number;
  /** Both ztunnels' RSS before the first connection, in MiB. */
  readonly rssBeforeMiB: number;
  /** Both ztunnels' RSS with every connection open and idle. */
  readonly rssOpenMiB: number;
  /** Both ztunnels' RSS after every connection carried its payload, and their peak (VmHWM) over the run. */
  readonly rssAfterDataMiB: number;
  readonly peakRssMiB: number;
  readonly perConnectionKiB: number;
  readonly intact: number;
  readonly echoSeconds: number;
  /** The RLIMIT_NOFILE every process ran with, when the bench could set it. */
  readonly nofile: number | undefined;
}

/** The prlimit prefix that gives a process `n` fds, or why it cannot be had (then processes keep the current limit). */
function fdLimit(n: number): { prefix: string[]; nofile: number | undefined } {
  const prefix = ['prlimit', `--nofile=${String(n)}:${String(n)}`];
  const r = spawnSync(prefix[0]!, [...prefix.slice(1), 'true'], { encoding: 'utf8' });
  if (r.status === 0) return { prefix, nofile: n };
  const why = r.error?.message ?? r.stderr.trim();
  process.stderr.write(
    `idle connections: cannot raise RLIMIT_NOFILE to ${String(n)} (${why}; above the hard limit that needs root with CAP_SYS_RESOURCE): every process keeps the current limit\n`,
  );
  return { prefix: [], nofile: undefined };
}

/** Runs this file as a child (`--echo` or `--load`) with the fd limit; resolves with the child and its stdout so far. */
function child(
  prefix: readonly string[],
  role: string,
  args: readonly string[],
): { proc: ChildProcess; out: () => string } {
  const [cmd, ...rest] = [...prefix, process.execPath, fileURLToPath(import.meta.url), role, ...args];
  const proc = spawn(cmd!, rest, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  return { proc, out: () => out };
}

/** The parent: CA and ztunnels up, the load generator in a child with the raised fd limit, then the table. */
export async function benchIdleConnections(): Promise<void> {
  const { prefix, nofile } = fdLimit(NOFILE);
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-bench-idle-'));
  const ca = path.join(dir, 'ca');
  await writePluginCaDir(ca);
  const zts = await startZtunnelPair({
    name: 'idle',
    dir,
    ca,
    clientIp: CLIENT_IP,
    appIp: APP_IP,
    controlIps: CONTROL_IPS,
    nofile,
  });
  const echo = child(prefix, '--echo', []);
  let result: IdleConnectionsResult;
  try {
    const [line] = (await once(echo.proc.stdout!, 'data')) as [Buffer];
    if (!line.toString().startsWith('listening')) throw new Error(`the echo app did not start: ${line.toString()}`);
    process.stderr.write(
      `idle connections: opening ${String(CONNECTIONS)} through one ztunnel pair (${String(OPEN_CONCURRENCY)} dials in flight)...\n`,
    );
    const load = child(
      prefix,
      '--load',
      zts.map((z) => String(z.pid)),
    );
    const [code] = (await once(load.proc, 'exit')) as [number | null];
    if (code !== 0) throw new Error(`the idle-connection load generator failed (exit ${String(code)})`);
    result = { ...(JSON.parse(load.out()) as Omit<IdleConnectionsResult, 'nofile'>), nofile };
  } finally {
    echo.proc.kill('SIGTERM');
    for (const z of zts) z.kill('SIGTERM');
  }
  const f = (v: number, d = 1): string => v.toFixed(d);
  process.stdout.write("\nidle tunnelled connections through one ztunnel pair (both ztunnels' RSS)\n");
  process.stdout.write(
    render(
      'table',
      [
        'CONNECTIONS',
        'ESTABLISHED',
        'SETUP s',
        'RSS BEFORE MiB',
        'RSS OPEN MiB',
        'KiB/CONN',
        'RSS AFTER DATA MiB',
        'PEAK MiB',
        'INTACT',
        'ECHO s',
      ],
      [
        [
          String(result.connections),
          String(result.established),
          f(result.setupSeconds),
          f(result.rssBeforeMiB),
          f(result.rssOpenMiB),
          f(result.perConnectionKiB),
          f(result.rssAfterDataMiB),
          f(result.peakRssMiB),
          String(result.intact),
          f(result.echoSeconds),
        ],
      ],
      result,
    ),
  );
  const met = idleConnectionTargets(result);
  process.stdout.write(`\nidle-connection targets\n${renderTargets(met)}`);
  const file = await writeResults('idle', { ...result, targets: met });
  process.stdout.write(`\nresults written to ${file}\n`);
  await rm(dir, { recursive: true, force: true });
}

/**
 * Opens `n` connections through the SOCKS5 port with at most `concurrency` dials in flight; a failed dial leaves a
 * hole. The dials come from CLIENT_IP (the SOCKS5 port serves only its workload's own address), as does each of
 * the app ztunnel's connections to the app; both pick their port at connect (IP_BIND_ADDRESS_NO_PORT), so 10,000
 * of each on one address do not exhaust a bind's port search (docs/performance.md).
 */
async function openAll(n: number, concurrency: number): Promise<(net.Socket | undefined)[]> {
  const sockets = new Array<net.Socket | undefined>(n);
  let next = 0;
  let failures = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        sockets[i] = await socks5Connect(CLIENT_IP, SOCKS5_PORT, APP_IP, ECHO_PORT, CLIENT_IP).catch((e: unknown) => {
          if (failures++ === 0)
            process.stderr.write(`idle connections: dial ${String(i)} failed: ${(e as Error).message}\n`);
          return undefined;
        });
      }
    }),
  );
  if (failures > 0) process.stderr.write(`idle connections: ${String(failures)} of ${String(n)} dials failed\n`);
  return sockets;
}

/** Sends each socket its own payload and resolves with how many echoes came back byte for byte. */
async function echoAll(sockets: readonly (net.Socket | undefined)[], payloads: Buffer): Promise<number> {
  let intact = 0;
  let pending = sockets.filter((s) => s !== undefined).length;
  if (pending === 0) return 0;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ECHO_TIMEOUT_MS);
    const settle = (): void => {
      if (--pending === 0) {
        clearTimeout(timer);
        resolve();
      }
    };
    sockets.forEach((s, i) => {
      if (s === undefined) return;
      const want = payloads.subarray(i * PAYLOAD_BYTES, (i + 1) * PAYLOAD_BYTES);
      const got = Buffer.alloc(PAYLOAD_BYTES);
      let n = 0;
      s.on('data', (d: Buffer) => {
        if (n + d.length > PAYLOAD_BYTES) {
          n = PAYLOAD_BYTES + 1;
          return;
        }
        d.copy(got, n);
        n += d.length;
        if (n === PAYLOAD_BYTES) {
          if (got.equals(want)) intact++;
          settle();
        }
      });
      s.once('error', settle);
      s.resume();
      s.write(want);
    });
  });
  return intact;
}

/** The echo app's process: says `listening` once it is, then echoes until killed. */
async function runEcho(): Promise<void> {
  const echo = net.createServer({ noDelay: true }, (s) => {
    s.on('error', () => s.destroy());
    s.pipe(s);
  });
  await new Promise<void>((r) => echo.listen({ port: ECHO_PORT, host: APP_IP, backlog: 4096 }, r));
  process.stdout.write('listening\n');
}

/**
 * The load generator: the connections, the samples; prints the result as JSON. A dial's SOCKS5 success comes after
 * the HBONE CONNECT's 200, which the server's ztunnel sends once its connection to the app is up: when every dial
 * has resolved, every connection is established end to end.
 */
async function runLoad(pids: readonly number[]): Promise<void> {
  const both = (): Promise<number> => currentRssMiB(pids);
  const rssBeforeMiB = await both();
  const t0 = performance.now();
  const sockets = await openAll(CONNECTIONS, OPEN_CONCURRENCY);
  const setupSeconds = (performance.now() - t0) / 1000;
  const rssOpenMiB = await both();
  if (HOLD_SECONDS > 0) {
    process.stderr.write(
      `idle connections: all open (ztunnels ${pids.join(', ')}), holding them idle for ${String(HOLD_SECONDS)} s\n`,
    );
    await new Promise((r) => setTimeout(r, HOLD_SECONDS * 1000));
  }
  const payloads = randomBytes(CONNECTIONS * PAYLOAD_BYTES);
  const t1 = performance.now();
  const intact = await echoAll(sockets, payloads);
  const echoSeconds = (performance.now() - t1) / 1000;
  const result: Omit<IdleConnectionsResult, 'nofile'> = {
    connections: CONNECTIONS,
    established: sockets.filter((x) => x !== undefined).length,
    setupSeconds,
    rssBeforeMiB,
    rssOpenMiB,
    rssAfterDataMiB: await both(),
    peakRssMiB: await rssMiB(pids),
    perConnectionKiB: ((rssOpenMiB - rssBeforeMiB) * 1024) / CONNECTIONS,
    intact,
    echoSeconds,
  };
  for (const s of sockets) s?.destroy();
  process.stdout.write(JSON.stringify(result));
}

if (process.argv[2] === '--echo') await runEcho();
else if (process.argv[2] === '--load') await runLoad(process.argv.slice(3).map(Number));
