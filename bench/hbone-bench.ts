/**
 * `npm run bench`: direct TCP vs amesh (SOCKS5 -> ztunnel -> HBONE -> ztunnel -> app, two processes) vs a stunnel4
 * mTLS pair, side by side in one run on loopback (interleaved rounds, medians), and with them, as root, the paths
 * between two pod network namespaces with and without in-pod capture (bench/capture-bench.ts); then the API server
 * section (bench/api-bench.ts), the idle-connection footprint (bench/idle-connections-bench.ts) and small HTTP
 * requests through the waypoint (bench/waypoint-bench.ts). Prints tables with ratios and writes JSON to bench/results/.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writePluginCaDir, CertificateAuthority } from '../src/lib/pki/certificate-authority.js';
import { createKeyAndCsr } from '../src/lib/pki/csr.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { tcpConnect } from '../src/echo/tcp-connect.js';
import { DATA_PATH_NODE_FLAGS } from '../src/lib/node-flags.js';
import { render } from '../src/lib/table.js';
import { writeResults } from './write-results.js';
import { startZtunnelPair } from './ztunnel-pair.js';
import { benchApi } from './api-bench.js';
import { benchIdleConnections } from './idle-connections-bench.js';
import { benchWaypoint } from './waypoint-bench.js';
import { cpuSeconds, currentRssMiB, median, rssMiB } from './proc-stats.js';
import { interleavedLatency, type Percentiles } from './interleaved-latency.js';
import { performanceTargets, renderTargets } from './performance-targets.js';
import { hostTcp } from './host-tcp.js';
import {
  CAPTURE_PATHS,
  startCapturePaths,
  type CapturePath,
  type CapturePaths,
  type PodTarget,
} from './capture-bench.js';
import { listenInNetns } from '../src/native/native.js';
import { netnsSkip } from '../test/helpers/netns.js';

const APP_IP = '127.0.40.2';
const CLIENT_IP = '127.0.40.1';
/**
 * `amesh-alt`: a second ztunnel pair, measured beside `amesh` in the same interleaved rounds, started with the Node
 * flags in BENCH_ALT_ZTUNNEL_NODE_FLAGS (space-separated; unset or empty: none) instead of the data-path flags, to
 * weigh a flag against its memory. Only when BENCH_PATHS names it.
 */
const ALT_PATH = 'amesh-alt';
const ALT_APP_IP = '127.0.42.32';
const ALT_CLIENT_IP = '127.0.42.31';
const altNodeFlags = (): string[] =>
  (process.env['BENCH_ALT_ZTUNNEL_NODE_FLAGS'] ?? '').split(/\s+/).filter((f) => f !== '');
const ECHO_PORT = 9000;
const SINK_PORT = 9001;
const THROUGHPUT_MS = 2500;
const LATENCY_ROUNDS = 5000;
/**
 * Uncounted ping-pongs per path before its latency counts. Each proxy idles while the other paths are measured (30-40 s
 * with the pods), long enough for V8's memory reducer to collect and drop optimized code; the first second of traffic
 * after that re-optimizes it (docs/performance.md, "Latency after idle"). 2,000 a path, about 2 s in turns, covers it.
 */
const LATENCY_WARMUP = 2000;
/** Ping-pongs a path takes in a row before the next path's turn: ~60 ms, well inside the host's swings of a second. */
const LATENCY_BLOCK = 250;
const CONN_MS = 2500;
const CONN_CONCURRENCY = 8;
/**
 * Rounds of the whole suite, interleaved across paths; each figure is the median over rounds. On a shared 2-core
 * machine one round's numbers swing by ±30% with the host's load; the median of interleaved rounds compares the
 * paths under the same conditions. `BENCH_ROUNDS=1` gives a quick single pass.
 */
const ROUNDS = Math.max(1, Number(process.env['BENCH_ROUNDS'] ?? 3) || 3);
const CHUNK = Buffer.alloc(64 * 1024, 0x61);

type Dial = (port: number) => Promise<net.Socket>;
interface Target {
  name: string;
  dial: Dial;
  pids: number[];
}

/**
 * The app: echo on 9000, a sink on 9001 that counts bytes and answers with one byte when the client is done; on
 * `host`, or for a capture path inside the server pod on its IP.
 */
async function startApp(pod: PodTarget | undefined, host: string): Promise<net.Server[]> {
  const echo = net.createServer({ noDelay: true }, (s) => {
    s.on('error', () => s.destroy());
    s.pipe(s);
  });
  const sink = net.createServer({ noDelay: true, allowHalfOpen: true }, (s) => {
    s.on('error', () => s.destroy());
    s.on('data', () => undefined);
    s.on('end', () => s.end('k'));
  });
  const listen = (s: net.Server, port: number): Promise<void> =>
    pod === undefined
      ? new Promise<void>((r) => s.listen(port, host, r))
      : listenInNetns(s, pod.serverNetns, { host: pod.serverIp, port });
  await Promise.all([listen(echo, ECHO_PORT), listen(sink, SINK_PORT)]);
  return [echo, sink];
}

/** Writes as fast as the path allows for `ms` on each of `streams` connections; returns bytes/s. */
async function throughput(
  t: Target,
  streams: number,
): Promise<{ bps: number; bytes: number; cpu: number; loadCpu: number }> {
  const cpu0 = cpuSeconds(t.pids);
  const load0 = process.cpuUsage();
  const start = performance.now();
  const counts = await Promise.all(
    Array.from({ length: streams }, async () => {
      const s = await t.dial(SINK_PORT);
      let sent = 0;
      await new Promise<void>((resolve, reject) => {
        s.on('error', reject);
        const pump = (): void => {
          while (performance.now() - start < THROUGHPUT_MS) {
            sent += CHUNK.length;
            if (!s.write(CHUNK)) {
              s.once('drain', pump);
              return;
            }
          }
          s.end();
          s.once('data', () => resolve());
          s.resume();
        };
        pump();
      });
      s.destroy();
      return sent;
    }),
  );
  const secs = (performance.now() - start) / 1000;
  const bytes = counts.reduce((a, b) => a + b, 0);
  const load = process.cpuUsage(load0);
  return { bps: bytes / secs, bytes, cpu: cpuSeconds(t.pids) - cpu0, loadCpu: (load.user + load.system) / 1e6 };
}

/** New connections per second: connect, 1-byte exchange, close, with 8 in parallel. */
async function connRate(t: Target): Promise<number> {
  const start = performance.now();
  let n = 0;
  await Promise.all(
    Array.from({ length: CONN_CONCURRENCY }, async () => {
      while (performance.now() - start < CONN_MS) {
        const s = await t.dial(ECHO_PORT);
        await new Promise<void>((resolve, reject) => {
          s.once('data', () => resolve());
          s.once('error', reject);
          s.resume(); // a SOCKS5 socket comes back paused
          s.write('x');
        });
        s.destroy();
        n++;
      }
    }),
  );
  return n / ((performance.now() - start) / 1000);
}

/** Client and server certificates for the comparison tunnels, from the same CA as the ztunnels. */
async function issueTunnelCerts(dir: string, ca: string): Promise<void> {
  const authority = await CertificateAuthority.fromPluginDir(ca);
  const issue = async (name: string, uri: string): Promise<void> => {
    const { keyPem, csrPem } = await createKeyAndCsr(uri);
    const chain = await authority.sign(csrPem, uri, 3600);
    await writeFile(path.join(dir, `${name}.crt`), chain.slice(0, -1).join(''));
    await writeFile(path.join(dir, `${name}.key`), keyPem);
    await writeFile(path.join(dir, 'root.pem'), chain[chain.length - 1]!);
  };
  await issue('sclient', 'spiffe://cluster.local/ns/bench/sa/client');
  await issue('sserver', 'spiffe://cluster.local/ns/bench/sa/app');
}

async function waitListening(host: string, port: number, what: string): Promise<void> {
  for (let i = 0; ; i++) {
    const ok = await tcpConnect(host, port).then(
      (s) => (s.destroy(), true),
      () => false,
    );
    if (ok) return;
    if (i > 100) throw new Error(`${what} did not start`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The Node floor: the same two-process mTLS tunnel as stunnel, written with Node's tls and pipe. */
async function startNodeTunnel(dir: string): Promise<ChildProcess[]> {
  const script = fileURLToPath(new URL('./node-tls-tunnel.js', import.meta.url));
  const files = (n: string): string[] => [
    path.join(dir, `${n}.crt`),
    path.join(dir, `${n}.key`),
    path.join(dir, 'root.pem'),
  ];
  const server = spawn(
    process.execPath,
    [
      ...DATA_PATH_NODE_FLAGS,
      script,
      'server',
      ...files('sserver'),
      ...[ECHO_PORT, SINK_PORT].map((p, i) => `127.0.43.2:${7443 + i}=${APP_IP}:${p}`),
    ],
    { stdio: 'inherit' },
  );
  const client = spawn(
    process.execPath,
    [
      ...DATA_PATH_NODE_FLAGS,
      script,
      'client',
      ...files('sclient'),
      ...[0, 1].map((i) => `127.0.43.1:${7000 + i}=127.0.43.2:${7443 + i}`),
    ],
    { stdio: 'inherit' },
  );
  await waitListening('127.0.43.2', 7443, 'node TLS tunnel server');
  await waitListening('127.0.43.1', 7000, 'node TLS tunnel client');
  return [server, client];
}

async function startStunnel(dir: string): Promise<ChildProcess[] | undefined> {
  const bin = ['/usr/bin/stunnel4', '/usr/bin/stunnel'].find((b) => existsSync(b));
  if (bin === undefined) return undefined;
  const common = `foreground = yes\npid =\nsocket = l:TCP_NODELAY=1\nsocket = r:TCP_NODELAY=1\nCAfile = ${dir}/root.pem\nverifyChain = yes\nsslVersionMin = TLSv1.3\n`;
  const clientConf =
    `${common}cert = ${dir}/sclient.crt\nkey = ${dir}/sclient.key\n` +
    [ECHO_PORT, SINK_PORT]
      .map((p, i) => `[c${p}]\nclient = yes\naccept = 127.0.41.1:${7000 + i}\nconnect = 127.0.41.2:${7443 + i}\n`)
      .join('');
  const serverConf =
    `${common}cert = ${dir}/sserver.crt\nkey = ${dir}/sserver.key\n` +
    [ECHO_PORT, SINK_PORT]
      .map((p, i) => `[s${p}]\naccept = 127.0.41.2:${7443 + i}\nconnect = ${APP_IP}:${p}\n`)
      .join('');
  await writeFile(path.join(dir, 'client.conf'), clientConf);
  await writeFile(path.join(dir, 'server.conf'), serverConf);
  const procs = ['server.conf', 'client.conf'].map((c) =>
    spawn(bin, [path.join(dir, c)], { stdio: ['ignore', 'ignore', 'ignore'] }),
  );
  await waitListening('127.0.41.1', 7000, 'stunnel');
  return procs;
}

interface Row {
  name: string;
  throughput1: number;
  throughput8: number;
  p50: number;
  p99: number;
  p999: number;
  connPerSec: number;
  cpuSecPerGB: number | null;
  /** The load-generator process (load generator and app sink), which shares the machine's cores with the proxies. */
  loadCpuSecPerGB: number;
  rssMiB: number | null;
}

/** One path's rows from several rounds, folded into a row of per-figure medians. */
function medianRow(rs: Row[]): Row {
  const med = (f: (r: Row) => number): number => median(rs.map(f));
  const first = rs[0]!;
  return {
    name: first.name,
    throughput1: med((r) => r.throughput1),
    throughput8: med((r) => r.throughput8),
    p50: med((r) => r.p50),
    p99: med((r) => r.p99),
    p999: med((r) => r.p999),
    connPerSec: med((r) => r.connPerSec),
    cpuSecPerGB: first.cpuSecPerGB === null ? null : med((r) => r.cpuSecPerGB ?? 0),
    loadCpuSecPerGB: med((r) => r.loadCpuSecPerGB),
    // VmHWM is a high-water mark: the last round's is the peak of the run.
    rssMiB: rs[rs.length - 1]!.rssMiB,
  };
}

function roundName(round: number): string {
  return round === 0 ? 'warm-up' : `round ${round}/${ROUNDS}`;
}

/** What a path's own child measures: everything but latency, which `latencyOf` takes for several paths at once. */
type PathFigures = Omit<Row, keyof Percentiles>;

async function measure(t: Target, round: number): Promise<PathFigures> {
  process.stderr.write(`  ${roundName(round)} ${t.name}: throughput...`);
  const one = await throughput(t, 1);
  const eight = await throughput(t, 8);
  process.stderr.write(' connections...\n');
  const cps = await connRate(t);
  const gb = (one.bytes + eight.bytes) / 1e9;
  return {
    name: t.name,
    throughput1: one.bps,
    throughput8: eight.bps,
    connPerSec: cps,
    cpuSecPerGB: t.pids.length === 0 ? null : (one.cpu + eight.cpu) / gb,
    loadCpuSecPerGB: (one.loadCpu + eight.loadCpu) / gb,
    rssMiB: t.pids.length === 0 ? null : await rssMiB(t.pids),
  };
}

/** The data-path section: the paths in `only` (amesh always, as the ratios are about it), or all of them. */
async function benchDataPaths(only: readonly string[] | undefined): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-bench-'));
  const ca = path.join(dir, 'ca');
  await writePluginCaDir(ca);
  const zts = await startZtunnelPair({
    name: 'bench',
    dir,
    ca,
    clientIp: CLIENT_IP,
    appIp: APP_IP,
    controlIps: ['127.0.42.1', '127.0.42.2'],
  });
  const idleRss = Math.max(...(await Promise.all(zts.map((z) => currentRssMiB([z.pid!])))));
  const alt =
    only?.includes(ALT_PATH) === true
      ? await startZtunnelPair({
          name: 'alt',
          dir,
          ca,
          clientIp: ALT_CLIENT_IP,
          appIp: ALT_APP_IP,
          controlIps: ['127.0.42.41', '127.0.42.42'],
          nodeFlags: altNodeFlags(),
        }).catch((e: unknown) => {
          for (const z of zts) z.kill('SIGTERM');
          throw e;
        })
      : [];
  const altIdleRss =
    alt.length === 0 ? undefined : Math.max(...(await Promise.all(alt.map((z) => currentRssMiB([z.pid!])))));
  await issueTunnelCerts(dir, ca);
  const stunnel = await startStunnel(dir);
  const nodeTunnel = await startNodeTunnel(dir);
  const paths: Record<string, number[]> = {
    direct: [],
    amesh: zts.map((z) => z.pid!),
    'node-tls': nodeTunnel.map((n) => n.pid!),
  };
  if (stunnel !== undefined) paths['stunnel'] = stunnel.map((n) => n.pid!);
  if (alt.length > 0) paths[ALT_PATH] = alt.map((z) => z.pid!);
  else process.stderr.write('stunnel4 not found (apt-get install stunnel4): comparing with direct TCP only\n');
  const wantedPods = CAPTURE_PATHS.filter((n) => only === undefined || only.includes(n));
  const skip = wantedPods.length > 0 && netnsSkip();
  if (skip !== false) process.stderr.write(`capture paths (${wantedPods.join(', ')}) skipped: ${skip}\n`);
  const stopProxies = (): void => {
    for (const p of [...zts, ...alt, ...nodeTunnel, ...(stunnel ?? [])]) p.kill('SIGTERM');
  };
  let capture: CapturePaths | undefined;
  try {
    if (skip === false && wantedPods.length > 0) capture = await startCapturePaths(dir, ca, wantedPods);
  } catch (e) {
    stopProxies();
    throw e;
  }
  for (const [n, t] of Object.entries(capture?.targets ?? {})) paths[n] = t.pids;
  const targets = Object.keys(paths).filter((n) => only === undefined || n === 'amesh' || only.includes(n));
  // The paths the load generator reaches from this network namespace have their latency taken together, in turn.
  const loopback = targets.filter((t) => !(CAPTURE_PATHS as readonly string[]).includes(t));
  const measureRound = async (r: number): Promise<Row[]> => {
    const figures: (PathFigures & Partial<Percentiles>)[] = [];
    for (const t of targets) {
      // The warm-up round is for the proxies: a path without one (direct) has nothing to warm.
      if (r > 0 || paths[t]!.length > 0)
        figures.push(await measureInChild(t, paths[t]!, r, capture?.targets[t as CapturePath]));
    }
    process.stderr.write(`  ${roundName(r)} latency, interleaved: ${loopback.join(', ')}\n`);
    const lat = await latencyInChild(loopback);
    return figures.map((f) => withLatency(f, lat[f.name] ?? f));
  };
  const rounds: Row[][] = [];
  const tcp = hostTcp();
  try {
    // One unmeasured pass through each proxy first: round 1 would otherwise include the proxies' JIT warm-up and
    // first dials (it ran 20-25% below the rounds after it), and the flat-over-time check compares against it.
    process.stderr.write('warming up (one unmeasured pass through each proxy):\n');
    await measureRound(0);
    process.stderr.write(`measuring (loopback, one run, side by side, ${ROUNDS} interleaved rounds, medians):\n`);
    for (let r = 1; r <= ROUNDS; r++) rounds.push(await measureRound(r));
  } finally {
    stopProxies();
    await capture?.stop();
  }
  const rows = targets.map((_, i) => medianRow(rounds.map((round) => round[i]!)));
  const byName = (n: string): Row | undefined => rows.find((r) => r.name === n);
  const fmt = (v: number | null, d = 1): string => (v === null ? '-' : v.toFixed(d));
  const mbps = (b: number): string => (b / 1e6).toFixed(0);
  const table = render(
    'table',
    [
      'PATH',
      'MB/s 1 STREAM',
      'MB/s 8 STREAMS',
      'P50 µs',
      'P99 µs',
      'P999 µs',
      'CONN/s',
      'PROXY CPU s/GB',
      'LOAD CPU s/GB',
      'PROXY RSS MiB',
    ],
    rows.map((r) => [
      r.name,
      mbps(r.throughput1),
      mbps(r.throughput8),
      fmt(r.p50),
      fmt(r.p99),
      fmt(r.p999),
      fmt(r.connPerSec, 0),
      fmt(r.cpuSecPerGB, 2),
      fmt(r.loadCpuSecPerGB, 2),
      fmt(r.rssMiB, 0),
    ]),
    rows,
  );
  process.stdout.write(
    `\nhost TCP: ${tcp.congestionControl} congestion control, ${tcp.defaultQdisc} default qdisc (docs/performance.md, "The host's congestion control")\n` +
      table,
  );
  const ratios: Record<string, Record<string, number>> = {};
  for (const [over, base] of [
    ['amesh', 'direct'],
    ['pod-capture', 'pod-direct'],
    ['amesh', 'node-tls'],
    [ALT_PATH, 'node-tls'],
    ['amesh', 'stunnel'],
  ] as const) {
    const o = byName(over);
    const b = byName(base);
    if (o === undefined || b === undefined) continue;
    ratios[`${over}/${base}`] = {
      throughput1: o.throughput1 / b.throughput1,
      throughput8: o.throughput8 / b.throughput8,
      p50: o.p50 / b.p50,
      p99: o.p99 / b.p99,
      p999: o.p999 / b.p999,
      connPerSec: o.connPerSec / b.connPerSec,
    };
  }
  process.stdout.write(
    '\nratios (path ÷ baseline; throughput and conn/s: higher is better; latency: lower is better)\n',
  );
  process.stdout.write(
    render(
      'table',
      ['RATIO', 'THRU 1', 'THRU 8', 'P50', 'P99', 'P999', 'CONN/s'],
      Object.entries(ratios).map(([k, r]) => [
        k,
        ...['throughput1', 'throughput8', 'p50', 'p99', 'p999', 'connPerSec'].map((f) => r[f]!.toFixed(2) + '×'),
      ]),
      ratios,
    ),
  );
  if (altIdleRss !== undefined)
    process.stdout.write(
      `\nidle ztunnel RSS (the larger of each pair, before traffic): amesh ${idleRss.toFixed(0)} MiB (${DATA_PATH_NODE_FLAGS.join(' ')}), ${ALT_PATH} ${altIdleRss.toFixed(0)} MiB (${altNodeFlags().join(' ') || 'no flags'})\n`,
    );
  const met = performanceTargets({ rows, rounds, idleZtunnelRssMiB: idleRss });
  process.stdout.write(
    `\ndata-path targets (amesh against the Node floor node-tls; flat over time needs BENCH_ROUNDS=10)\n${renderTargets(met)}`,
  );
  const file = await writeResults('hbone', {
    rounds: ROUNDS,
    hostTcp: tcp,
    rows,
    ratios,
    targets: met,
    idleZtunnelRssMiB: idleRss,
    ...(altIdleRss === undefined ? {} : { altIdleZtunnelRssMiB: altIdleRss, altNodeFlags: altNodeFlags() }),
    allRounds: rounds,
  });
  process.stdout.write(`\nresults written to ${file}\n`);
  await rm(dir, { recursive: true, force: true });
}

/** How the load generator reaches the app through each path (for a capture path, from inside the client pod). */
function dialFor(name: string, pod: PodTarget | undefined): Dial {
  if (pod !== undefined) return (p) => tcpConnect(pod.serverIp, p);
  if (name === 'direct') return (p) => tcpConnect(APP_IP, p);
  if (name === 'amesh') return (p) => socks5Connect(CLIENT_IP, 15080, APP_IP, p, CLIENT_IP);
  if (name === ALT_PATH) return (p) => socks5Connect(ALT_CLIENT_IP, 15080, ALT_APP_IP, p, ALT_CLIENT_IP);
  const host = name === 'node-tls' ? '127.0.43.1' : '127.0.41.1';
  return (p) => tcpConnect(host, p === ECHO_PORT ? 7000 : 7001);
}

/**
 * Each path is measured by a fresh child process that runs the app (echo and sink) and the load generator, so no
 * path inherits the load generator's heap and sockets from the one before (its CPU per GB fell from ~1.4 to ~0.9
 * and is now alike across paths). Some slowdown of amesh after the direct path has run remains; it is not in this
 * process, nor in TCP metrics or TIME_WAIT (docs/performance.md, "Flat over time"; `BENCH_PATHS` measures without it). For a capture path the child runs in the client pod's network
 * namespace (`nsenter --net`), as an unchanged app there would, and is told the pod target in BENCH_POD.
 */
async function measureInChild(
  name: string,
  pids: number[],
  round: number,
  pod: PodTarget | undefined,
): Promise<PathFigures & Partial<Percentiles>> {
  const argv = [
    process.execPath,
    fileURLToPath(import.meta.url),
    '--measure',
    name,
    String(round),
    ...pids.map(String),
  ];
  const [cmd, ...args] = pod === undefined ? argv : ['nsenter', `--net=${pod.clientNetns}`, ...argv];
  const env = pod === undefined ? process.env : { ...process.env, BENCH_POD: JSON.stringify(pod) };
  return (await runChild(cmd!, args, env, name)) as PathFigures & Partial<Percentiles>;
}

/** The loopback paths' latency (`latencyOf`, all of them in turn) in a fresh child, as `measureInChild` runs the rest. */
async function latencyInChild(names: readonly string[]): Promise<Record<string, Percentiles>> {
  const args = [fileURLToPath(import.meta.url), '--latency', ...names];
  return (await runChild(process.execPath, args, process.env, `latency (${names.join(', ')})`)) as Record<
    string,
    Percentiles
  >;
}

/** Runs a measuring child to its end and parses the JSON it printed. */
async function runChild(cmd: string, args: string[], env: NodeJS.ProcessEnv, what: string): Promise<unknown> {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], env });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`measuring ${what} failed (exit ${code})`);
  return JSON.parse(out);
}

/** A path's row: its own child's figures with its latency, from that child (a capture path) or the interleaved one. */
function withLatency(f: PathFigures & Partial<Percentiles>, lat: Partial<Percentiles>): Row {
  if (lat.p50 === undefined || lat.p99 === undefined || lat.p999 === undefined)
    throw new Error(`no latency was measured for ${f.name}`);
  return { ...f, p50: lat.p50, p99: lat.p99, p999: lat.p999 };
}

/** Percentiles of `targets` from ping-pongs taken in turns of LATENCY_BLOCK on one connection each (bench/interleaved-latency.ts). */
async function latencyOf(targets: readonly Target[]): Promise<Map<string, Percentiles>> {
  const sockets = await Promise.all(targets.map((t) => t.dial(ECHO_PORT)));
  try {
    return await interleavedLatency(
      targets.map((t, k) => ({ name: t.name, socket: sockets[k]! })),
      LATENCY_ROUNDS,
      LATENCY_WARMUP,
      LATENCY_BLOCK,
    );
  } finally {
    for (const s of sockets) s.destroy();
  }
}

/**
 * The child side of `measureInChild`: app up, one path measured, its figures printed as JSON. A capture path's
 * latency is taken here, alone: no other path is reachable from its pod.
 */
async function measureChild(name: string, round: number, pids: number[]): Promise<void> {
  const podEnv = process.env['BENCH_POD'];
  const pod = podEnv === undefined ? undefined : (JSON.parse(podEnv) as PodTarget);
  const app = await startApp(pod, name === ALT_PATH ? ALT_APP_IP : APP_IP);
  try {
    const t = { name, dial: dialFor(name, pod), pids };
    const figures = await measure(t, round);
    process.stdout.write(
      JSON.stringify(pod === undefined ? figures : { ...figures, ...(await latencyOf([t])).get(name) }),
    );
  } finally {
    for (const s of app) s.close();
  }
}

/** The child side of `latencyInChild`: every app the paths lead to up, their latency printed as JSON by path. */
async function latencyChild(names: readonly string[]): Promise<void> {
  const hosts = [...new Set(names.map((n) => (n === ALT_PATH ? ALT_APP_IP : APP_IP)))];
  const apps = (await Promise.all(hosts.map((h) => startApp(undefined, h)))).flat();
  try {
    const lat = await latencyOf(names.map((name) => ({ name, dial: dialFor(name, undefined), pids: [] })));
    process.stdout.write(JSON.stringify(Object.fromEntries(lat)));
  } finally {
    for (const s of apps) s.close();
  }
}

/**
 * The data paths `BENCH_PATHS` can name; `api` names the API server section, `idle` the idle-connection footprint,
 * `waypoint` HTTP requests through the waypoint.
 */
const DATA_PATHS: readonly string[] = ['direct', 'amesh', 'node-tls', 'stunnel', ...CAPTURE_PATHS, ALT_PATH];
const SECTIONS: readonly string[] = ['idle', 'api', 'waypoint'];

/**
 * Every section by default. `BENCH_PATHS=amesh,stunnel` measures a subset of the data paths (amesh is always
 * kept; `pod-direct,pod-capture` are the capture paths, skipped with the reason when not root), `BENCH_PATHS=api` the API server alone, `BENCH_PATHS=stunnel,api` both sections,
 * `BENCH_PATHS=idle` the idle-connection footprint (bench/idle-connections-bench.ts), `BENCH_PATHS=waypoint` small
 * HTTP requests through the waypoint against a `node:http` proxy (bench/waypoint-bench.ts), `BENCH_PATHS=amesh,amesh-alt,node-tls`
 * a second ztunnel pair with other Node flags beside amesh (ALT_PATH).
 * `BENCH_CPU_PROF=<dir>` runs the ztunnels under `--cpu-prof` (`profileFlags` in ztunnel-pair.ts).
 */
async function main(): Promise<void> {
  const only = process.env['BENCH_PATHS']
    ?.split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  const unknown = only?.filter((p) => !SECTIONS.includes(p) && !DATA_PATHS.includes(p)) ?? [];
  if (unknown.length > 0)
    throw new Error(`BENCH_PATHS: unknown ${unknown.join(', ')} (known: ${[...DATA_PATHS, ...SECTIONS].join(', ')})`);
  if (only === undefined || only.some((p) => DATA_PATHS.includes(p))) await benchDataPaths(only);
  if (only === undefined || only.includes('idle')) await benchIdleConnections();
  if (only === undefined || only.includes('api')) await benchApi(ROUNDS);
  if (only === undefined || only.includes('waypoint')) await benchWaypoint(ROUNDS);
}

if (process.argv[2] === '--measure')
  await measureChild(process.argv[3]!, Number(process.argv[4]), process.argv.slice(5).map(Number));
else if (process.argv[2] === '--latency') await latencyChild(process.argv.slice(3));
else await main();
