#!/usr/bin/env node
// Runs every test: unit tests (src/**/*.test.ts, bench/**/*.test.ts) and integration tests (test/**/*.test.ts),
// each file in its own Node process with tsx (as node --test does), as many at once as the machine has cores.
// Arguments name roots or single files to run instead (node scripts/run-tests.mjs test/ipv6.test.ts src/ztunnel).
//
// The scheduling is ours, not node --test's: Node 20's runner sorts the files by name, which would start the
// longest ones (test/up-*.test.ts) last and leave one core idle at the end of the run, and on a timeout it leaves
// the processes the file started running. Here the slowest files start first, and a file that runs past
// FILE_TIMEOUT_MS is killed with every process it started and reported as timed out; what a file leaves running
// when it ends is killed too, so that it cannot hold addresses the next files need.
import { readdirSync, statSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';

/**
 * A file still running after this fails, named, instead of hanging the run. The slowest file
 * (test/up-ambient.test.ts, two `amesh up` clusters) takes about 110 s alone and more than twice that while other
 * files load the machine.
 */
const FILE_TIMEOUT_MS = 600_000;

/**
 * Started first, longest first, so the run does not end with one long file on one core. Only the order depends on
 * this list (the run prints its slowest files to keep it current); a file missing from it still runs.
 */
const SLOWEST_FIRST = [
  'test/up-ambient.test.ts',
  'test/up-cluster.test.ts',
  'test/demo.test.ts',
  'test/control-plane-recovery.test.ts',
  'test/cni-plugin.test.ts',
  'test/pod-rules-netns.test.ts',
  'test/istiod-kube-ca.test.ts',
  'test/hbone-connection-lost.test.ts',
  'test/cni-agent-netns.test.ts',
  'test/istiod-ztunnel.test.ts',
  'test/istiod-kube.test.ts',
  'test/hbone-mixed-load.test.ts',
];

const roots = process.argv.length > 2 ? process.argv.slice(2) : ['src', 'test', 'bench'];
const files = [];
const walk = (p) => {
  if (statSync(p).isDirectory()) {
    for (const e of readdirSync(p).sort()) walk(path.join(p, e));
  } else if (p.endsWith('.test.ts')) files.push(path.relative('.', p));
};
for (const r of roots) walk(r);
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const rank = (f) => {
  const i = SLOWEST_FIRST.indexOf(f);
  return i === -1 ? SLOWEST_FIRST.length : i;
};
files.sort((a, b) => rank(a) - rank(b));

const COUNTS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'];
const totals = Object.fromEntries(COUNTS.map((k) => [k, 0]));
const failedFiles = [];
const durations = [];
const running = new Set();

/** Kills a file's process group: the file's process and everything it started that is still there. */
const killGroup = (child) => {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
};

/** Runs one file (TAP on stdout), prints its output when it ends, and adds its counts to the totals. */
function runFile(file) {
  return new Promise((resolve) => {
    const start = performance.now();
    const child = spawn(process.execPath, ['--import', 'tsx', '--test-reporter=tap', file], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    running.add(child);
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    let verdict;
    const timer = setTimeout(() => {
      verdict = `timed out after ${FILE_TIMEOUT_MS / 1000} s`;
      killGroup(child);
    }, FILE_TIMEOUT_MS);
    // At exit, not at close: a process the file left behind may hold its output open.
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (verdict === undefined && code !== 0) verdict = `exited with ${signal ?? code}`;
      killGroup(child);
    });
    child.once('close', () => {
      running.delete(child);
      const seconds = (performance.now() - start) / 1000;
      durations.push([seconds, file]);
      for (const k of COUNTS) totals[k] += Number(new RegExp(`^# ${k} (\\d+)$`, 'm').exec(out)?.[1] ?? 0);
      if (verdict !== undefined) failedFiles.push(`${file}: ${verdict}`);
      process.stdout.write(`# ${file} (${seconds.toFixed(1)} s)${verdict === undefined ? '' : `: ${verdict}`}\n${out}`);
      resolve();
    });
  });
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    for (const child of running) killGroup(child);
    process.exit(130);
  });
}

const start = performance.now();
const queue = [...files];
const worker = async () => {
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) await runFile(file);
};
await Promise.all(Array.from({ length: Math.min(availableParallelism(), files.length) }, worker));

durations.sort((a, b) => b[0] - a[0]);
console.log(`# files ${files.length}, ${availableParallelism()} at a time`);
for (const k of COUNTS) console.log(`# ${k} ${totals[k]}`);
console.log(`# duration_ms ${Math.round(performance.now() - start)}`);
console.log(
  `# slowest: ${durations
    .slice(0, 8)
    .map(([s, f]) => `${f} ${s.toFixed(1)} s`)
    .join(', ')}`,
);
for (const f of failedFiles) console.log(`# failed: ${f}`);
process.exit(failedFiles.length === 0 ? 0 : 1);
