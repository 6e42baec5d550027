/**
 * The waypoint section of `npm run bench` (`BENCH_PATHS=waypoint`): small HTTP/1.1 requests (GET, a 1 KiB answer)
 * from a keep-alive client holding BENCH_WAYPOINT_CONNECTIONS (16) connections, each sending its next request as
 * soon as the last is answered, for BENCH_WAYPOINT_MS (5 s) a path; requests/s and per-request latency. Paths:
 * - `amesh-waypoint`: client -> SOCKS5 -> ztunnel (node n1) -> HBONE -> the waypoint proxy (node n3), which serves
 *   the Service's HTTP port request by request -> HBONE -> ztunnel (node n2) -> the app;
 * - `node-http`: the floor on the same path: client -> SOCKS5 -> ztunnel n1 -> HBONE -> a minimal `node:http`
 *   reverse proxy in the waypoint's place (node n4; `node:http2` for the HBONE tunnels in and out, the waypoint's
 *   identity, a keep-alive Agent upstream) -> HBONE -> ztunnel n2 -> the app. ztunnel n1 reaches it as the waypoint
 *   of a second Service (web-floor) backed by the same app;
 * - `direct`: client -> the app, for context.
 * Every part is its own process on loopback: both ztunnels and the waypoint (children of this file, certificates
 * from a plug-in CA, which `amesh proxy waypoint` cannot take: it asks istiod), the floor proxy, the app, and a fresh
 * load generator per path and round. The mesh's resources come from the tests' python3-grpcio xDS server
 * (test/helpers/python-xds-server.ts); without python3-grpcio the section says so and is skipped. No root needed.
 * The proxies run with the data-path Node flags and log at BENCH_WAYPOINT_LOG_LEVEL (warn: no per-connection access
 * log).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import http2 from 'node:http2';
import type net from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { Duplex } from 'node:stream';
import type tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { HBONE_PORT, SOCKS5_PORT, ZTUNNEL_READINESS_PORT } from '../src/lib/istio-ports.js';
import { LogControl } from '../src/lib/log.js';
import { DATA_PATH_NODE_FLAGS } from '../src/lib/node-flags.js';
import { CertificateAuthority, writePluginCaDir } from '../src/lib/pki/certificate-authority.js';
import { render } from '../src/lib/table.js';
import { startWaypointProxy } from '../src/waypoint/waypoint-proxy.js';
import { loadZtunnelConfig } from '../src/ztunnel/config.js';
import { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { pythonSkip } from '../test/helpers/python.js';
import { pythonXdsServer } from '../test/helpers/python-xds-server.js';
import { cpuSeconds, median, quantile, rssMiB } from './proc-stats.js';
import { renderTargets, waypointTargets } from './performance-targets.js';
import { writeResults } from './write-results.js';
import { profileFlags } from './ztunnel-pair.js';

/** The client workload (node n1), the app (n2), the waypoint (n3); the floor proxy; the xDS server. */
const CLIENT_IP = '127.0.50.1';
const APP_IP = '127.0.50.2';
const WAYPOINT_IP = '127.0.50.3';
const FLOOR_IP = '127.0.50.4';
const XDS_IP = '127.0.50.5';
/** Admin, metrics and readiness addresses of ztunnel n1, ztunnel n2 and the waypoint. */
const CONTROL_IPS = ['127.0.50.11', '127.0.50.12', '127.0.50.13'] as const;
const APP_PORT = 8080;
const SERVICE_VIP = '10.96.50.10';
/** The same app behind the floor, as a second Service whose waypoint is the floor proxy (floor-0, node n4). */
const FLOOR_SERVICE_VIP = '10.96.50.11';
const SERVICE_PORT = 80;
const NAMESPACE = 'app';
const SERVICE_HOST = `web.${NAMESPACE}.svc.cluster.local`;
const WAYPOINT_HOST = `waypoint.${NAMESPACE}.svc.cluster.local`;
const WAYPOINT_POD = `Kubernetes//Pod/${NAMESPACE}/waypoint-0`;
const FLOOR_SERVICE_HOST = `web-floor.${NAMESPACE}.svc.cluster.local`;
const FLOOR_HOST = `floor.${NAMESPACE}.svc.cluster.local`;

const CONNECTIONS = Math.max(1, Number(process.env['BENCH_WAYPOINT_CONNECTIONS'] ?? 16) || 16);
const MEASURE_MS = Math.max(500, Number(process.env['BENCH_WAYPOINT_MS'] ?? 5000) || 5000);
/** The warm-up round's window: one unmeasured pass through each proxy, for their JIT and first dials. */
const WARMUP_ROUND_MS = 2000;
/** Each load generator's own unmeasured start: its connections opened and its client code compiled. */
const LOAD_WARMUP_MS = 1000;
const RESPONSE_BYTES = 1024;
const LOG_LEVEL = process.env['BENCH_WAYPOINT_LOG_LEVEL'] || 'warn';
const READY_POLLS = 400;
const READY_POLL_MS = 50;
/** The app's answer header saying whether the request came with an `x-request-id` (the waypoint adds one). */
const SEEN_HEADER = 'x-bench-request-id-seen';

const PATHS = ['direct', 'node-http', 'amesh-waypoint'] as const;
type PathName = (typeof PATHS)[number];
const WAYPOINT_PATH: PathName = 'amesh-waypoint';
const FLOOR_PATH: PathName = 'node-http';

/**
 * The mesh as the python3-grpcio xDS server sends it: client-0 (n1) calls the Service web, whose port 80 is declared
 * HTTP/1.1 (app_protocol 1) and which uses the waypoint waypoint-0 (n3); web-0 (n2) backs it, and its namespace
 * admits only the waypoint's identity, the usual way to make the waypoint the only way in.
 */
const RESOURCES = [
  {
    workload: {
      uid: 'Kubernetes//Pod/load/client-0',
      name: 'client-0',
      namespace: 'load',
      addresses: [CLIENT_IP],
      service_account: 'client',
      node: 'n1',
    },
  },
  {
    workload: {
      uid: `Kubernetes//Pod/${NAMESPACE}/web-0`,
      name: 'web-0',
      namespace: NAMESPACE,
      addresses: [APP_IP],
      service_account: 'web',
      node: 'n2',
      services: {
        [`${NAMESPACE}/${SERVICE_HOST}`]: [[SERVICE_PORT, APP_PORT]],
        [`${NAMESPACE}/${FLOOR_SERVICE_HOST}`]: [[SERVICE_PORT, APP_PORT]],
      },
    },
  },
  {
    workload: {
      uid: WAYPOINT_POD,
      name: 'waypoint-0',
      namespace: NAMESPACE,
      addresses: [WAYPOINT_IP],
      service_account: 'waypoint',
      node: 'n3',
      services: { [`${NAMESPACE}/${WAYPOINT_HOST}`]: [[15008, 15008]] },
    },
  },
  {
    service: {
      name: 'web',
      namespace: NAMESPACE,
      hostname: SERVICE_HOST,
      vips: [SERVICE_VIP],
      ports: [[SERVICE_PORT, APP_PORT, 1]],
      waypoint: { namespace: NAMESPACE, hostname: WAYPOINT_HOST },
    },
  },
  {
    service: {
      name: 'waypoint',
      namespace: NAMESPACE,
      hostname: WAYPOINT_HOST,
      vips: ['10.96.50.20'],
      ports: [[15008, 15008]],
    },
  },
  {
    workload: {
      uid: `Kubernetes//Pod/${NAMESPACE}/floor-0`,
      name: 'floor-0',
      namespace: NAMESPACE,
      addresses: [FLOOR_IP],
      service_account: 'waypoint',
      node: 'n4',
      services: { [`${NAMESPACE}/${FLOOR_HOST}`]: [[15008, 15008]] },
    },
  },
  {
    service: {
      name: 'web-floor',
      namespace: NAMESPACE,
      hostname: FLOOR_SERVICE_HOST,
      vips: [FLOOR_SERVICE_VIP],
      ports: [[SERVICE_PORT, APP_PORT, 1]],
      waypoint: { namespace: NAMESPACE, hostname: FLOOR_HOST },
    },
  },
  {
    service: {
      name: 'floor',
      namespace: NAMESPACE,
      hostname: FLOOR_HOST,
      vips: ['10.96.50.21'],
      ports: [[15008, 15008]],
    },
  },
  {
    authorization: {
      name: 'only-via-waypoint',
      namespace: NAMESPACE,
      principals: [`cluster.local/ns/${NAMESPACE}/sa/waypoint`],
    },
  },
];

/** What one load generator measured on one path. */
interface LoadFigures {
  requests: number;
  errors: number;
  seconds: number;
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  /** CPU per answered request over the measured window: the path's proxies (summed), the app, the load generator. */
  proxyCpuUsPerRequest: number | null;
  /** The same for each proxy on its own, in the path's order: ztunnel n1, the waypoint or the floor, ztunnel n2. */
  proxyCpuUsPerRequestEach: number[];
  appCpuUsPerRequest: number;
  loadCpuUsPerRequest: number;
}

interface WaypointRow extends LoadFigures {
  name: PathName;
  /** The path's proxies' peak RSS (VmHWM), summed, in MiB. */
  proxyRssMiB: number | null;
}

/** The parts a run starts, and the processes each path crosses. */
interface Parts {
  readonly procs: ChildProcess[];
  readonly app: ChildProcess;
  readonly proxies: Record<PathName, number[]>;
}

/** Runs this file in a child with `role` and `args`, under `nodeFlags`. */
function child(role: string, args: readonly string[], nodeFlags: readonly string[] = []): ChildProcess {
  return spawn(process.execPath, [...nodeFlags, fileURLToPath(import.meta.url), role, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/** Resolves once `proc` prints `listening`; rejects when it exits first. */
async function listening(proc: ChildProcess, what: string): Promise<void> {
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`${what} exited (${String(code)}): ${out}`));
    proc.once('exit', onExit);
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('listening')) {
        proc.off('exit', onExit);
        resolve();
      }
    });
  });
}

/** Resolves once the proxy whose readiness is on `ip` answers ready; rejects when it exits or never does. */
async function ready(proc: ChildProcess, ip: string, what: string): Promise<void> {
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`${what} exited (${String(proc.exitCode)}) before it was ready`);
    const ok = await fetch(`http://${ip}:${String(ZTUNNEL_READINESS_PORT)}/healthz/ready`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    if (i > READY_POLLS) throw new Error(`${what} did not become ready`);
    await new Promise((r) => setTimeout(r, READY_POLL_MS));
  }
}

/** The mesh's proxies, by node: ztunnel n1 (the client's), ztunnel n2 (the app's), the waypoint on n3. */
const NODES = ['n1', 'n2', 'n3'] as const;
type MeshNode = (typeof NODES)[number];

/**
 * `node`'s proxy in a child of this file, with the data-path Node flags, certificates from the plug-in CA `ca`,
 * resources from the xDS server `xdsEnv` names. The ztunnels are set up as `amesh ztunnel` sets itself up; they run
 * here rather than through `ameshCommand()`, which falls back to the TypeScript source through tsx while any source
 * file is newer than its build, so that all three proxies always run the same compiled code.
 */
function startProxy(node: MeshNode, ca: string, xdsEnv: Record<string, string>): ChildProcess {
  return spawn(
    process.execPath,
    [
      ...profileFlags(),
      ...DATA_PATH_NODE_FLAGS,
      fileURLToPath(import.meta.url),
      '--proxy',
      node,
      ca,
      JSON.stringify(xdsEnv),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
}

async function stopAll(procs: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    procs.map(async (p) => {
      if (p.exitCode !== null || p.signalCode !== null) return;
      const exited = once(p, 'exit');
      p.kill('SIGTERM');
      const timer = setTimeout(() => p.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }),
  );
}

/** App, floor proxy, xDS server, both ztunnels and the waypoint, each ready; stopped again if one fails. */
async function startParts(dir: string): Promise<Parts> {
  const ca = path.join(dir, 'ca');
  await writePluginCaDir(ca);
  const procs: ChildProcess[] = [];
  // A bench that dies (its output piped into a reader that went away) takes its parts with it.
  process.once('exit', () => procs.forEach((p) => p.kill('SIGKILL')));
  try {
    const app = child('--app', []);
    procs.push(app);
    await listening(app, 'the app');
    const floor = child('--floor', [ca], DATA_PATH_NODE_FLAGS);
    procs.push(floor);
    await listening(floor, 'the node-http floor proxy');
    const xds = await pythonXdsServer(dir, XDS_IP, RESOURCES);
    procs.push(xds.peer.proc);
    const [z1, z2, wp] = NODES.map((n) => startProxy(n, ca, xds.env)) as [ChildProcess, ChildProcess, ChildProcess];
    procs.push(z1, z2, wp);
    await ready(z1, CONTROL_IPS[0], 'ztunnel n1');
    await ready(z2, CONTROL_IPS[1], 'ztunnel n2');
    await ready(wp, CONTROL_IPS[2], 'the waypoint');
    const pid = (p: ChildProcess): number => p.pid!;
    return {
      procs,
      app,
      proxies: { direct: [], 'node-http': [z1, floor, z2].map(pid), 'amesh-waypoint': [z1, wp, z2].map(pid) },
    };
  } catch (e) {
    await stopAll(procs);
    throw e;
  }
}

/** One load generator on `name` for `ms`, in a fresh process; its figures. */
async function measurePath(parts: Parts, name: PathName, ms: number): Promise<WaypointRow> {
  const load = child('--load', [name, String(ms), String(parts.app.pid), ...parts.proxies[name].map(String)]);
  let out = '';
  load.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const [code] = (await once(load, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`the waypoint-section load generator failed on ${name} (exit ${String(code)})`);
  const pids = parts.proxies[name];
  return {
    name,
    ...(JSON.parse(out) as LoadFigures),
    proxyRssMiB: pids.length === 0 ? null : await rssMiB(pids),
  };
}

function medianRow(rows: readonly WaypointRow[]): WaypointRow {
  const first = rows[0]!;
  const med = (f: (r: WaypointRow) => number): number => median(rows.map(f));
  return {
    name: first.name,
    requests: med((r) => r.requests),
    errors: rows.reduce((a, r) => a + r.errors, 0),
    seconds: med((r) => r.seconds),
    requestsPerSec: med((r) => r.requestsPerSec),
    p50Ms: med((r) => r.p50Ms),
    p99Ms: med((r) => r.p99Ms),
    p999Ms: med((r) => r.p999Ms),
    proxyCpuUsPerRequest: first.proxyCpuUsPerRequest === null ? null : med((r) => r.proxyCpuUsPerRequest ?? 0),
    proxyCpuUsPerRequestEach: first.proxyCpuUsPerRequestEach.map((_, i) => med((r) => r.proxyCpuUsPerRequestEach[i]!)),
    appCpuUsPerRequest: med((r) => r.appCpuUsPerRequest),
    loadCpuUsPerRequest: med((r) => r.loadCpuUsPerRequest),
    // VmHWM is a high-water mark: the last round's is the peak of the run.
    proxyRssMiB: rows[rows.length - 1]!.proxyRssMiB,
  };
}

/** Measures the waypoint section over `rounds` interleaved rounds, prints its tables, and writes the JSON. */
export async function benchWaypoint(rounds: number): Promise<void> {
  const skip = pythonSkip('grpc', 'python3-grpcio');
  if (skip !== false) {
    process.stderr.write(`waypoint section skipped: its xDS server needs python3-grpcio: ${skip}\n`);
    return;
  }
  // Every path here needs both cores: what else the host runs moves the figures (it is printed with them).
  const loadBefore = loadavg()[0] ?? 0;
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-bench-waypoint-'));
  const all: WaypointRow[][] = [];
  try {
    const parts = await startParts(dir);
    try {
      const round = async (r: number, ms: number): Promise<WaypointRow[]> => {
        // The order turns each round, so no path always follows the same one.
        const order = PATHS.map((_, i) => PATHS[(i + r) % PATHS.length]!);
        process.stderr.write(`  ${r === 0 ? 'warm-up' : `round ${String(r)}/${String(rounds)}`} waypoint:`);
        const rows: WaypointRow[] = [];
        for (const name of order) {
          process.stderr.write(` ${name}...`);
          rows.push(await measurePath(parts, name, ms));
        }
        process.stderr.write('\n');
        return PATHS.map((n) => rows.find((row) => row.name === n)!);
      };
      process.stderr.write(
        `measuring the waypoint (HTTP/1.1 GET, ${String(RESPONSE_BYTES)} B answers, ${String(CONNECTIONS)} keep-alive connections, ${String(MEASURE_MS)} ms a path, ${String(rounds)} interleaved rounds, medians):\n`,
      );
      await round(0, WARMUP_ROUND_MS);
      for (let r = 1; r <= rounds; r++) all.push(await round(r, MEASURE_MS));
    } finally {
      // Proxies first, the xDS server and the app after: the proxies would log the lost xDS stream.
      for (const p of [...parts.procs].reverse()) await stopAll([p]);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const loadAfter = loadavg()[0] ?? 0;
  const rows = PATHS.map((_, i) => medianRow(all.map((round) => round[i]!)));
  const by = (n: PathName): WaypointRow => rows.find((r) => r.name === n)!;
  const fmt = (v: number | null, d = 1): string => (v === null ? '-' : v.toFixed(d));
  process.stdout.write(
    `\nwaypoint: HTTP/1.1 GET, ${String(RESPONSE_BYTES)} B answers, ${String(CONNECTIONS)} keep-alive connections, ${String(availableParallelism())} cores (medians of ${String(rounds)} rounds; host load average ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after)\n`,
  );
  process.stdout.write(
    render(
      'table',
      [
        'PATH',
        'REQ/s',
        'P50 ms',
        'P99 ms',
        'P999 ms',
        'PROXY CPU µs/REQ',
        'APP CPU µs/REQ',
        'LOAD CPU µs/REQ',
        'PROXY RSS MiB',
        'ERRORS',
      ],
      rows.map((r) => [
        r.name,
        fmt(r.requestsPerSec, 0),
        fmt(r.p50Ms, 2),
        fmt(r.p99Ms, 2),
        fmt(r.p999Ms, 2),
        fmt(r.proxyCpuUsPerRequest, 0),
        fmt(r.appCpuUsPerRequest, 0),
        fmt(r.loadCpuUsPerRequest, 0),
        fmt(r.proxyRssMiB, 0),
        String(r.errors),
      ]),
      rows,
    ),
  );
  for (const [name, middle] of [
    [WAYPOINT_PATH, 'waypoint'],
    [FLOOR_PATH, 'floor'],
  ] as const) {
    const each = by(name).proxyCpuUsPerRequestEach.map((v) => v.toFixed(0));
    process.stdout.write(
      `${name} proxy CPU µs per request: ztunnel n1 ${each[0]!}, ${middle} ${each[1]!}, ztunnel n2 ${each[2]!}\n`,
    );
  }
  const ratios: Record<string, Record<string, number | null>> = {};
  for (const [over, base] of [
    [WAYPOINT_PATH, FLOOR_PATH],
    [WAYPOINT_PATH, 'direct'],
    [FLOOR_PATH, 'direct'],
  ] as const) {
    const o = by(over);
    const b = by(base);
    ratios[`${over}/${base}`] = {
      requestsPerSec: o.requestsPerSec / b.requestsPerSec,
      p50: o.p50Ms / b.p50Ms,
      p99: o.p99Ms / b.p99Ms,
      proxyCpuPerRequest:
        o.proxyCpuUsPerRequest === null || b.proxyCpuUsPerRequest === null
          ? null
          : o.proxyCpuUsPerRequest / b.proxyCpuUsPerRequest,
    };
  }
  const x = (v: number | null | undefined): string => (v === null || v === undefined ? '-' : `${v.toFixed(2)}×`);
  process.stdout.write('\nratios (path ÷ baseline; req/s: higher is better; latency and CPU: lower is better)\n');
  process.stdout.write(
    render(
      'table',
      ['RATIO', 'REQ/s', 'P50', 'P99', 'PROXY CPU/REQ'],
      Object.entries(ratios).map(([k, r]) => [
        k,
        x(r['requestsPerSec']),
        x(r['p50']),
        x(r['p99']),
        x(r['proxyCpuPerRequest']),
      ]),
      ratios,
    ),
  );
  const met = waypointTargets({ waypoint: by(WAYPOINT_PATH), floor: by(FLOOR_PATH), responseBytes: RESPONSE_BYTES });
  process.stdout.write(`\nwaypoint targets (amesh-waypoint against the Node floor node-http)\n${renderTargets(met)}`);
  const file = await writeResults('waypoint', {
    rounds,
    connections: CONNECTIONS,
    measureMs: MEASURE_MS,
    responseBytes: RESPONSE_BYTES,
    logLevel: LOG_LEVEL,
    cores: availableParallelism(),
    hostLoad1mBefore: loadBefore,
    hostLoad1mAfter: loadAfter,
    rows,
    ratios,
    targets: met,
    allRounds: all,
  });
  process.stdout.write(`\nresults written to ${file}\n`);
}

/** The app: a 1 KiB answer to every request, with whether it carried an `x-request-id`. */
async function runApp(): Promise<void> {
  const body = Buffer.alloc(RESPONSE_BYTES, 0x61);
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    req.resume();
    res.writeHead(200, {
      'content-type': 'text/plain',
      'content-length': body.length,
      [SEEN_HEADER]: req.headers['x-request-id'] === undefined ? 'no' : 'yes',
    });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen({ host: APP_IP, port: APP_PORT, backlog: 4096 }, r));
  process.stdout.write('listening\n');
}

/** RFC 9110 §7.6.1's connection-specific fields, which a proxy does not forward. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function endToEnd(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const k in headers) if (!HOP_BY_HOP.has(k)) out[k] = headers[k];
  return out;
}

/**
 * Node's HTTP client over HBONE tunnels of one `node:http2` session to ztunnel n2: each connection is a CONNECT
 * stream to the app. The streams are kept alive by the Agent; a stream is not a socket, so the Agent's TCP
 * keep-alive is left out.
 */
class HboneAgent extends http.Agent {
  private session: http2.ClientHttp2Session | undefined;

  constructor(private readonly tls: tls.SecureContextOptions) {
    super({ keepAlive: true, maxSockets: Infinity, scheduling: 'lifo' });
  }

  override createConnection(
    _options: http.ClientRequestArgs,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): undefined {
    if (this.session === undefined || this.session.closed || this.session.destroyed) {
      const session = http2.connect(`https://${APP_IP}:${String(HBONE_PORT)}`, {
        ...this.tls,
        minVersion: 'TLSv1.3',
        checkServerIdentity: (_host, cert) => spiffeMismatch(cert, `${NAMESPACE}/sa/web`),
      });
      session.on('error', () => undefined);
      session.once('close', () => {
        if (this.session === session) this.session = undefined;
      });
      this.session = session;
    }
    const stream = this.session.request({ ':method': 'CONNECT', ':authority': `${APP_IP}:${String(APP_PORT)}` });
    stream.once('response', (h) => {
      if (h[':status'] === 200) callback?.(null, bufferDuplex(stream));
      else {
        stream.destroy();
        callback?.(new Error(`HBONE CONNECT answered ${String(h[':status'])}`), undefined as never);
      }
    });
    stream.once('error', (e: Error) => callback?.(e, undefined as never));
    return undefined;
  }

  override keepSocketAlive(): boolean {
    return true;
  }

  /** Node's own step, given the `ref` it calls: a stream has no handle to ref. */
  override reuseSocket(socket: Duplex, req: http.ClientRequest): void {
    super.reuseSocket(Object.assign(socket, { ref: () => socket }), req);
  }
}

/**
 * `stream` as a Duplex that hands it Buffers one write at a time: what `node:http` writes straight onto an
 * Http2Stream arrives with its first line corrupted on Node 20 (seen on both the server's and the client's side).
 */
function bufferDuplex(stream: http2.Http2Stream): Duplex {
  const d = new Duplex({
    write(chunk: Buffer, _encoding, callback) {
      stream.write(chunk, callback);
    },
    read() {
      stream.resume();
    },
    final(callback) {
      stream.end(callback);
    },
    destroy(e, callback) {
      stream.destroy(e ?? undefined);
      callback(e);
    },
  });
  stream.on('data', (b: Buffer) => {
    if (!d.push(b)) stream.pause();
  });
  stream.once('end', () => d.push(null));
  stream.once('error', (e: Error) => d.destroy(e));
  return d;
}

/** An error when `cert` is not the SPIFFE identity `cluster.local/ns/<nsSa>` (TLS's `checkServerIdentity`). */
function spiffeMismatch(cert: tls.PeerCertificate, nsSa: string): Error | undefined {
  const want = `URI:spiffe://cluster.local/ns/${nsSa}`;
  return cert.subjectaltname?.split(', ').includes(want) ? undefined : new Error(`the peer is not ${want}`);
}

/**
 * The floor: the least a Node HTTP reverse proxy does in the waypoint's place. `node:http2` terminates the HBONE
 * tunnels ztunnel n1 opens (mTLS with the waypoint's identity, one CONNECT stream per client connection), each
 * stream is a connection of a `node:http` server, and every request goes to the app over a kept-alive HBONE tunnel
 * to ztunnel n2 (HboneAgent). No policy, telemetry or routing: the app's address is fixed.
 */
async function runFloor(caDir: string): Promise<void> {
  const ca = await CertificateAuthority.fromPluginDir(caDir);
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const chain = ca.issue(
    publicKey.export({ type: 'spki', format: 'der' }),
    [{ type: 'url', value: `spiffe://cluster.local/ns/${NAMESPACE}/sa/waypoint` }],
    3600,
  );
  const identity = {
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
    cert: chain.slice(0, -1).join(''),
    ca: ca.rootBundlePem,
  };
  const agent = new HboneAgent(identity);
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const up = http.request(
      { agent, host: APP_IP, port: APP_PORT, method: req.method, path: req.url, headers: endToEnd(req.headers) },
      (r) => {
        res.writeHead(r.statusCode ?? 502, endToEnd(r.headers));
        r.pipe(res);
      },
    );
    up.on('error', () => {
      if (res.headersSent) res.destroy();
      else res.writeHead(502).end();
    });
    req.pipe(up);
  });
  const hbone = http2.createSecureServer({
    ...identity,
    minVersion: 'TLSv1.3',
    requestCert: true,
    rejectUnauthorized: true,
  });
  hbone.on('stream', (stream, headers) => {
    if (headers[':method'] !== 'CONNECT') {
      stream.respond({ ':status': 405 }, { endStream: true });
      return;
    }
    stream.respond({ ':status': 200 });
    server.emit('connection', bufferDuplex(stream));
  });
  await new Promise<void>((r) => hbone.listen({ host: FLOOR_IP, port: HBONE_PORT, backlog: 4096 }, r));
  process.stdout.write('listening\n');
}

/** The proxy of `node` (startProxy); stops on SIGTERM as `amesh ztunnel` does. */
async function runProxy(node: MeshNode, ca: string, xdsEnv: Record<string, string>): Promise<void> {
  const control = (port: number): string => `${CONTROL_IPS[NODES.indexOf(node)]}:${String(port)}`;
  const flags = {
    localCa: ca,
    adminAddress: control(15000),
    metricsAddress: control(15020),
    readinessAddress: control(ZTUNNEL_READINESS_PORT),
  };
  const env = { ...xdsEnv, NODE_NAME: node, LOG_FORMAT: 'json', RUST_LOG: LOG_LEVEL };
  const component = node === 'n3' ? 'waypoint' : 'ztunnel';
  const logs = new LogControl({ format: 'json', level: LOG_LEVEL, component, out: process.stderr });
  const proxy =
    node === 'n3'
      ? await startWaypointProxy(
          {
            ztunnel: loadZtunnelConfig(flags, {
              ...env,
              POD_NAME: 'waypoint-0',
              POD_NAMESPACE: NAMESPACE,
              INSTANCE_IP: WAYPOINT_IP,
            }),
            podUid: WAYPOINT_POD,
            instanceIp: WAYPOINT_IP,
            gateway: `${NAMESPACE}/waypoint`,
          },
          logs,
        )
      : await Ztunnel.start(loadZtunnelConfig(flags, { ...env, UNSTABLE_ENABLE_SOCKS5: 'true' }), logs);
  proxy.once('fatal', () => void proxy.shutdown().then(() => process.exit(1)));
  process.once('SIGTERM', () => void proxy.shutdown().then(() => process.exit(0)));
}

/** Each connection made through ztunnel n1's SOCKS5 port from the client workload's address, to the Service `vip`. */
class Socks5Agent extends http.Agent {
  constructor(
    options: http.AgentOptions,
    private readonly vip: string,
  ) {
    super(options);
  }

  override createConnection(
    _options: http.ClientRequestArgs,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    socks5Connect(CLIENT_IP, SOCKS5_PORT, this.vip, SERVICE_PORT, CLIENT_IP).then(
      (s: net.Socket) => {
        // socks5Connect hands the socket back paused; node:http's client reads it with a 'data' listener.
        s.resume();
        callback?.(null, s);
      },
      (e: unknown) => callback?.(e as Error, undefined as unknown as Duplex),
    );
    return undefined;
  }
}

/** Where the load generator sends `name`'s requests, and the agent holding its connections. */
function clientFor(name: PathName): { host: string; port: number; agent: http.Agent } {
  const options = { keepAlive: true, maxSockets: CONNECTIONS, maxFreeSockets: CONNECTIONS };
  if (name === 'direct') return { host: APP_IP, port: APP_PORT, agent: new http.Agent(options) };
  if (name === 'node-http')
    return { host: FLOOR_SERVICE_VIP, port: SERVICE_PORT, agent: new Socks5Agent(options, FLOOR_SERVICE_VIP) };
  return { host: SERVICE_VIP, port: SERVICE_PORT, agent: new Socks5Agent(options, SERVICE_VIP) };
}

/** One GET, resolved with the app's answer to whether it saw an `x-request-id`; anything but 200 and 1 KiB fails. */
function get(c: { host: string; port: number; agent: http.Agent }): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const req = http.request({ agent: c.agent, host: c.host, port: c.port, path: '/', method: 'GET' }, (res) => {
      let n = 0;
      res.on('data', (d: Buffer) => (n += d.length));
      res.once('error', reject);
      res.once('end', () => {
        if (res.statusCode === 200 && n === RESPONSE_BYTES) resolve(res.headers[SEEN_HEADER] as string | undefined);
        else reject(new Error(`answered ${String(res.statusCode)} with ${String(n)} bytes`));
      });
    });
    req.once('error', reject);
    req.end();
  });
}

/**
 * The load generator: CONNECTIONS requests in flight on `name`, first LOAD_WARMUP_MS unmeasured, then `ms` measured;
 * prints its figures as JSON. The processes in `pids` (the path's proxies) and the app are charged their CPU over
 * the measured window.
 */
async function runLoad(name: PathName, ms: number, appPid: number, pids: readonly number[]): Promise<void> {
  const c = clientFor(name);
  let measuring = false;
  let stopAt = performance.now() + LOAD_WARMUP_MS;
  const samples: number[] = [];
  /** Failed requests (the warm-up's are not counted), and the first one's error. */
  let failed: { count: number; first?: Error } = { count: 0 };
  let checked = name !== WAYPOINT_PATH;
  const worker = async (): Promise<void> => {
    while (performance.now() < stopAt) {
      const t0 = performance.now();
      try {
        const seen = await get(c);
        if (!checked) {
          checked = true;
          if (seen !== 'yes') throw new Error('the app saw no x-request-id: the requests did not cross the waypoint');
        }
        if (measuring) samples.push(performance.now() - t0);
      } catch (e) {
        if (!checked) throw e;
        failed.count++;
        failed.first ??= e as Error;
      }
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  failed = { count: 0 };
  measuring = true;
  const proxy0 = pids.map((p) => cpuSeconds([p]));
  const app0 = cpuSeconds([appPid]);
  const load0 = process.cpuUsage();
  const start = performance.now();
  stopAt = start + ms;
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  const seconds = (performance.now() - start) / 1000;
  const load = process.cpuUsage(load0);
  const proxyCpu = pids.map((p, i) => cpuSeconds([p]) - proxy0[i]!);
  const appCpu = cpuSeconds([appPid]) - app0;
  c.agent.destroy();
  const n = samples.length;
  if (n === 0) throw new Error(`no request was answered on ${name}: ${String(failed.first)}`);
  if (failed.first !== undefined)
    process.stderr.write(`${name}: ${String(failed.count)} requests failed, the first: ${failed.first.message}\n`);
  const perRequest = (cpuSec: number): number => (cpuSec * 1e6) / n;
  const figures: LoadFigures = {
    requests: n,
    errors: failed.count,
    seconds,
    requestsPerSec: n / seconds,
    p50Ms: quantile(samples, 0.5),
    p99Ms: quantile(samples, 0.99),
    p999Ms: quantile(samples, 0.999),
    proxyCpuUsPerRequest: pids.length === 0 ? null : perRequest(proxyCpu.reduce((a, b) => a + b, 0)),
    proxyCpuUsPerRequestEach: proxyCpu.map(perRequest),
    appCpuUsPerRequest: perRequest(appCpu),
    loadCpuUsPerRequest: perRequest((load.user + load.system) / 1e6),
  };
  process.stdout.write(JSON.stringify(figures));
}

if (process.argv[2] === '--app') await runApp();
else if (process.argv[2] === '--floor') await runFloor(process.argv[3]!);
else if (process.argv[2] === '--proxy')
  await runProxy(process.argv[3] as MeshNode, process.argv[4]!, JSON.parse(process.argv[5]!) as Record<string, string>);
else if (process.argv[2] === '--load')
  await runLoad(
    process.argv[3] as PathName,
    Number(process.argv[4]),
    Number(process.argv[5]),
    process.argv.slice(6).map(Number),
  );
