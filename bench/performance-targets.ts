/**
 * The data-path targets, each with what this run measured and whether it is met: throughput, CPU per
 * byte and latency against `node-tls` (the Node floor: a plain mTLS tunnel pair doing no HTTP/2), connection
 * rate against stunnel, the in-pod capture path's ratios against the SOCKS5 path's, the idle ztunnel's RSS, and
 * flat over time (meaningful with BENCH_ROUNDS=10): the last round against the first, and a line fitted through
 * every round with its 95% interval beside the Node floor's; and the idle-connection
 * footprint (bench/idle-connections-bench.ts); and small HTTP requests through the waypoint against a minimal
 * `node:http` reverse proxy (bench/waypoint-bench.ts).
 */
import { render } from '../src/lib/table.js';
import { fittedChange } from './proc-stats.js';

/** The per-path figures the targets read (a bench Row). */
export interface PathFigures {
  readonly name: string;
  readonly throughput1: number;
  readonly throughput8: number;
  readonly p50: number;
  readonly p99: number;
  readonly connPerSec: number;
  readonly cpuSecPerGB: number | null;
}

export interface TargetInput {
  /** Medians over rounds, by path. */
  readonly rows: readonly PathFigures[];
  /** Every round's figures, in order, for the first/last comparison. */
  readonly rounds: readonly (readonly PathFigures[])[];
  /** The idle ztunnels' RSS right after start, before any traffic, in MiB (the larger of the two). */
  readonly idleZtunnelRssMiB: number;
}

export interface TargetRow {
  readonly target: string;
  readonly want: string;
  readonly measured: string;
  readonly met: boolean;
}

const IDLE_RSS_LIMIT_MIB = 70;
const FLAT_TOLERANCE = 0.05;

const x = (v: number): string => `${v.toFixed(2)}×`;

export function performanceTargets(input: TargetInput): TargetRow[] {
  const by = (n: string): PathFigures | undefined => input.rows.find((r) => r.name === n);
  const out: TargetRow[] = [];
  const add = (target: string, want: string, value: number, met: boolean, shown = x(value)): void =>
    void out.push({ target, want, measured: shown, met });
  const a = by('amesh');
  const floor = by('node-tls');
  if (a !== undefined && floor !== undefined) {
    add(
      'throughput 1 stream vs node-tls',
      '≥ 0.90×',
      a.throughput1 / floor.throughput1,
      a.throughput1 / floor.throughput1 >= 0.9,
    );
    add(
      'throughput 8 streams vs node-tls',
      '≥ 0.90×',
      a.throughput8 / floor.throughput8,
      a.throughput8 / floor.throughput8 >= 0.9,
    );
    if (a.cpuSecPerGB !== null && floor.cpuSecPerGB !== null)
      add(
        'proxy CPU per GB vs node-tls',
        '≤ 1.15×',
        a.cpuSecPerGB / floor.cpuSecPerGB,
        a.cpuSecPerGB / floor.cpuSecPerGB <= 1.15,
      );
    add('p50 latency vs node-tls', '≤ 1.05×', a.p50 / floor.p50, a.p50 / floor.p50 <= 1.05);
    add('p99 latency vs node-tls', '≤ 1.20×', a.p99 / floor.p99, a.p99 / floor.p99 <= 1.2);
  }
  const st = by('stunnel');
  if (a !== undefined && st !== undefined)
    add('new connections/s vs stunnel', '≥ 4×', a.connPerSec / st.connPerSec, a.connPerSec / st.connPerSec >= 4);
  const direct = by('direct');
  const podDirect = by('pod-direct');
  const capture = by('pod-capture');
  if (a !== undefined && direct !== undefined && podDirect !== undefined && capture !== undefined) {
    for (const [label, f] of [
      ['throughput 1 stream', (r: PathFigures) => r.throughput1],
      ['throughput 8 streams', (r: PathFigures) => r.throughput8],
      ['connections/s', (r: PathFigures) => r.connPerSec],
    ] as const) {
      const socks = f(a) / f(direct);
      const inpod = f(capture) / f(podDirect);
      add(
        `in-pod ${label}: pod-capture/pod-direct vs amesh/direct`,
        `≥ ${x(socks)}`,
        inpod,
        inpod >= socks * (1 - FLAT_TOLERANCE),
      );
    }
  }
  add(
    'idle ztunnel RSS',
    `≤ ${String(IDLE_RSS_LIMIT_MIB)} MiB`,
    input.idleZtunnelRssMiB,
    input.idleZtunnelRssMiB <= IDLE_RSS_LIMIT_MIB,
    `${input.idleZtunnelRssMiB.toFixed(0)} MiB`,
  );
  if (input.rounds.length > 1) {
    const series = (name: string, f: (r: PathFigures) => number | null): number[] =>
      input.rounds.flatMap((round) => {
        const r = round.find((p) => p.name === name);
        const v = r === undefined ? null : f(r);
        return v === null ? [] : [v];
      });
    const pct = (v: number): string => `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)}%`;
    const rounds = String(input.rounds.length);
    const within = `within ±${String(FLAT_TOLERANCE * 100)}%`;
    for (const [label, f] of [
      ['throughput 1 stream', (r: PathFigures) => r.throughput1],
      ['throughput 8 streams', (r: PathFigures) => r.throughput8],
      ['proxy CPU per GB', (r: PathFigures) => r.cpuSecPerGB],
    ] as const) {
      const a = series('amesh', f);
      if (a.length !== input.rounds.length) continue;
      const c = a[a.length - 1]! / a[0]! - 1;
      add(`flat: amesh ${label}, round ${rounds} vs round 1`, within, c, Math.abs(c) <= FLAT_TOLERANCE, pct(c));
      if (a.length < 3) continue;
      // One round swings by ±15% for every path, stunnel included: a line fitted through all rounds shows a drift
      // that the first and last rounds alone cannot, and the Node floor's fit shows what the host did meanwhile.
      const fit = fittedChange(a);
      const floor = series('node-tls', f);
      const control = floor.length === a.length ? `; node-tls ${pct(fittedChange(floor).change)}` : '';
      add(
        `flat: amesh ${label}, fitted over ${rounds} rounds`,
        within,
        fit.change,
        Math.abs(fit.change) <= FLAT_TOLERANCE,
        `${pct(fit.change)} ±${(fit.halfWidth95 * 100).toFixed(1)}${control}`,
      );
    }
  }
  return out;
}

/** What the idle-connection phase measured (bench/idle-connections-bench.ts). */
export interface IdleConnectionFigures {
  readonly connections: number;
  /** Both ztunnels' RSS with every connection open and idle, in MiB. */
  readonly rssOpenMiB: number;
  /** Connections whose echo came back byte for byte. */
  readonly intact: number;
}

const IDLE_CONNECTIONS_WANTED = 10_000;
const IDLE_CONNECTIONS_RSS_LIMIT_MIB = 600;

export function idleConnectionTargets(f: IdleConnectionFigures): TargetRow[] {
  const enough = f.connections >= IDLE_CONNECTIONS_WANTED;
  return [
    {
      target: `${String(IDLE_CONNECTIONS_WANTED)} idle connections: both ztunnels' RSS`,
      want: `< ${String(IDLE_CONNECTIONS_RSS_LIMIT_MIB)} MiB`,
      measured: `${f.rssOpenMiB.toFixed(0)} MiB (${String(f.connections)} open)`,
      met: enough && f.rssOpenMiB < IDLE_CONNECTIONS_RSS_LIMIT_MIB,
    },
    {
      target: 'every byte intact when they carry data',
      want: `${String(IDLE_CONNECTIONS_WANTED)} of ${String(IDLE_CONNECTIONS_WANTED)}`,
      measured: `${String(f.intact)} of ${String(f.connections)}`,
      met: enough && f.intact === f.connections,
    },
  ];
}

export function renderTargets(rows: readonly TargetRow[]): string {
  return render(
    'table',
    ['TARGET', 'WANT', 'MEASURED', 'MET'],
    rows.map((r) => [r.target, r.want, r.measured, r.met ? 'yes' : 'NO']),
    rows,
  );
}

/** The figures of one path of the waypoint section (bench/waypoint-bench.ts) the targets read. */
export interface WaypointPathFigures {
  readonly requestsPerSec: number;
  readonly p99Ms: number;
  /** Requests that failed, over every round. */
  readonly errors: number;
}

const WAYPOINT_RPS_RATIO = 0.8;
const WAYPOINT_P99_RATIO = 1.5;

/** Small HTTP requests through the waypoint against the same requests through a minimal `node:http` reverse proxy. */
export function waypointTargets(f: {
  readonly waypoint: WaypointPathFigures;
  readonly floor: WaypointPathFigures;
  readonly responseBytes: number;
}): TargetRow[] {
  const rps = f.waypoint.requestsPerSec / f.floor.requestsPerSec;
  const p99 = f.waypoint.p99Ms / f.floor.p99Ms;
  return [
    {
      target: 'waypoint requests/s vs node-http',
      want: `≥ ${x(WAYPOINT_RPS_RATIO)}`,
      measured: x(rps),
      met: rps >= WAYPOINT_RPS_RATIO,
    },
    {
      target: 'waypoint p99 latency vs node-http',
      want: `≤ ${x(WAYPOINT_P99_RATIO)}`,
      measured: x(p99),
      met: p99 <= WAYPOINT_P99_RATIO,
    },
    {
      target: `every request answered 200 with ${String(f.responseBytes)} B`,
      want: '0 failed',
      measured: `${String(f.waypoint.errors)} failed`,
      met: f.waypoint.errors === 0,
    },
  ];
}
