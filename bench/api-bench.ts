/**
 * The API section of `npm run bench`: `amesh apiserver` as its own process, on a fresh data directory each
 * round, driven by a fresh load-generator process per phase (bench/api-load.ts): 10,000 pod creates with 64 in
 * flight, then lists of all 10,000 pods, then 50 watchers of all pods while creates arrive at a steady rate.
 * Each figure is the median over rounds; the table sets them against the API server's aims (AIMS).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ameshCommand } from '../src/up/amesh-command.js';
import { render } from '../src/lib/table.js';
import type { ApiPhase, CreateFigures, ListFigures, WatchFigures } from './api-load.js';
import { median, rssMiB } from './proc-stats.js';
import { writeResults } from './write-results.js';

/** Loopback address of the measured API server (its port is the kernel's choice). */
const APISERVER_HOST = '127.0.92.1';
/** How long the API server may take to open its store and write its credentials. */
const READY_TIMEOUT_MS = 30_000;
/** Phases in the order they build on each other: the creates fill the store the lists read. */
const PHASES: readonly ApiPhase[] = ['create', 'list', 'watch'];

/** The API server's peak resident memory (VmHWM) after each phase. */
interface PeakMemory {
  peakRssAfterCreateMiB: number;
  peakRssAfterListMiB: number;
  peakRssAfterWatchMiB: number;
}
const PEAK_AFTER: Record<ApiPhase, keyof PeakMemory> = {
  create: 'peakRssAfterCreateMiB',
  list: 'peakRssAfterListMiB',
  watch: 'peakRssAfterWatchMiB',
};

/**
 * The host's 1-minute load average at the end of the round: on a shared machine the write-to-event tail follows
 * it (other processes' fsyncs and CPU), so each round's figures carry it.
 */
type ApiRow = CreateFigures & ListFigures & WatchFigures & PeakMemory & { hostLoad1m: number };

/** The API server's aims: a 10,000-pod list under 1 s, 1,000 creates/s, p99 write-to-event under 50 ms. */
const AIMS = { listMs: 1000, createsPerSec: 1000, sendToEventP99Ms: 50 } as const;

/** `amesh apiserver` on `dataDir`; resolves with the process once it logs that it is ready. */
async function startApiServer(dataDir: string): Promise<ChildProcess> {
  const { cmd, args } = ameshCommand();
  const child = spawn(cmd, [...args, 'apiserver', '--data-dir', dataDir, '--listen', `${APISERVER_HOST}:0`], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_FORMAT: 'json' },
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`amesh apiserver not ready after ${String(READY_TIMEOUT_MS)} ms:\n${out}`)),
      READY_TIMEOUT_MS,
    );
    // Kept reading for the process's life, so its log never fills a pipe and blocks it.
    const onData = (d: Buffer): void => {
      out = (out + d.toString()).slice(-64 * 1024);
      if (out.includes('API server ready')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`amesh apiserver exited (${String(code)}) before it was ready:\n${out}`)),
    );
  });
  return child;
}

async function runPhase(phase: ApiPhase, kubeconfig: string, pid: number): Promise<object> {
  const script = fileURLToPath(new URL('./api-load.js', import.meta.url));
  const child = spawn(process.execPath, [script, phase, kubeconfig, String(pid)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`API bench phase ${phase} failed (exit ${String(code)})`);
  return JSON.parse(out) as object;
}

async function measureRound(round: number, rounds: number): Promise<ApiRow> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-api-bench-'));
  const dataDir = path.join(dir, 'data');
  const server = await startApiServer(dataDir);
  try {
    const pid = server.pid ?? 0;
    let row = {};
    for (const phase of PHASES) {
      process.stderr.write(
        phase === 'create' ? `  round ${String(round)}/${String(rounds)} api: ${phase}...` : ` ${phase}...`,
      );
      row = {
        ...row,
        ...(await runPhase(phase, path.join(dataDir, 'kubeconfig'), pid)),
        [PEAK_AFTER[phase]]: await rssMiB([pid]),
      };
    }
    process.stderr.write('\n');
    return { ...(row as Omit<ApiRow, 'hostLoad1m'>), hostLoad1m: loadavg()[0] ?? 0 };
  } finally {
    server.kill('SIGTERM');
    if (server.exitCode === null) await once(server, 'exit');
    await rm(dir, { recursive: true, force: true });
  }
}

function medianRow(rows: readonly ApiRow[]): ApiRow {
  const first = rows[0]!;
  const out: Record<string, number> = {};
  for (const k of Object.keys(first)) out[k] = median(rows.map((r) => (r as unknown as Record<string, number>)[k]!));
  return out as unknown as ApiRow;
}

/** Measures the API server over `rounds` rounds, prints its table against the aims, and writes the JSON. */
export async function benchApi(rounds: number): Promise<void> {
  process.stderr.write(
    `measuring amesh apiserver (own process, fresh data directory per round, ${String(rounds)} rounds, medians):\n`,
  );
  const all: ApiRow[] = [];
  for (let r = 1; r <= rounds; r++) all.push(await measureRound(r, rounds));
  const m = medianRow(all);
  const fmt = (v: number, d = 1): string => v.toFixed(d);
  /** figure ÷ aim; `higher` says which way is better. */
  const aimed = (value: number, aim: number, higher: boolean): string[] => {
    const ratio = value / aim;
    return [
      `${higher ? '≥' : '<'} ${String(aim)}`,
      `${ratio.toFixed(2)}×`,
      (higher ? ratio >= 1 : ratio < 1) ? 'pass' : 'MISS',
    ];
  };
  const none = ['-', '-', ''];
  const rows: string[][] = [
    [
      `list ${m.pods.toLocaleString('en')} pods, ms (sent → parsed)`,
      fmt(m.listMs, 0),
      ...aimed(m.listMs, AIMS.listMs, false),
    ],
    [
      `creates/s (${m.pods.toLocaleString('en')} pods, ${String(m.concurrency)} in flight)`,
      fmt(m.createsPerSec, 0),
      ...aimed(m.createsPerSec, AIMS.createsPerSec, true),
    ],
    [
      `watch p99 ms, create sent → event at ${String(m.watchers)} watchers`,
      fmt(m.sendToEventP99Ms),
      ...aimed(m.sendToEventP99Ms, AIMS.sendToEventP99Ms, false),
    ],
    ['list: first byte ms / client parse ms', `${fmt(m.listFirstByteMs, 0)} / ${fmt(m.listParseMs, 0)}`, ...none],
    ['list: MB / server CPU s per list', `${fmt(m.listBytes / 1e6)} / ${fmt(m.serverCpuPerList, 2)}`, ...none],
    ['create: p50 / p99 ms', `${fmt(m.createP50Ms)} / ${fmt(m.createP99Ms)}`, ...none],
    ['create: server CPU s per 1,000', fmt(m.serverCpuPer1000, 2), ...none],
    [
      `watch p50 ms, create sent → event (${String(m.writes)} creates at ${String(m.writesPerSec)}/s)`,
      fmt(m.sendToEventP50Ms),
      ...none,
    ],
    [
      'watch p50 / p99 ms, create acknowledged → event',
      `${fmt(m.ackToEventP50Ms)} / ${fmt(m.ackToEventP99Ms)}`,
      ...none,
    ],
    ['watch phase: create p99 ms / server CPU s', `${fmt(m.writeP99Ms)} / ${fmt(m.serverCpuSec, 2)}`, ...none],
    [
      'watch phase: s waiting for a core, server / load generator',
      `${fmt(m.serverRunQueueSec, 2)} / ${fmt(m.loadRunQueueSec, 2)}`,
      ...none,
    ],
    [`host load average (1 min, ${String(availableParallelism())} cores)`, fmt(m.hostLoad1m), ...none],
    [
      'apiserver peak RSS MiB after create / list / watch',
      [m.peakRssAfterCreateMiB, m.peakRssAfterListMiB, m.peakRssAfterWatchMiB].map((v) => fmt(v, 0)).join(' / '),
      ...none,
    ],
  ];
  process.stdout.write('\n' + render('table', ['API SERVER', 'VALUE', 'AIM', 'RATIO', ''], rows, m));
  process.stdout.write('(ratio = figure ÷ aim: list and watch delay lower is better, creates/s higher is better)\n');
  const file = await writeResults('api', { rounds, aims: AIMS, median: m, allRounds: all });
  process.stdout.write(`\nresults written to ${file}\n`);
}
