#!/usr/bin/env node
// Runs every test: unit tests (src/**/*.test.ts, bench/**/*.test.ts) and integration tests (test/**/*.test.ts).
// Arguments name roots or single files to run instead (node scripts/run-tests.mjs test/ipv6.test.ts src/ztunnel);
// `--lint` also runs the linters (eslint, prettier) as jobs beside the tests, which is what `npm test` does.
//
// The scheduling is ours, not node --test's, for three reasons:
// - Cost. Node 20 starts one process per test file, and each process loads what its file imports anew (through
//   tsx, a second of CPU more). Here unit test files share one process, integration test files share one a few
//   at a time (the long ones, and those that need it, have their own), and everything runs compiled from dist/
//   when the build is current (`npm test` builds first).
// - Order. Node 20's runner sorts files by name, which would start the longest ones (test/up-*.test.ts) last and
//   leave one core idle at the end. Here the slowest jobs start first.
// - Bounds. A job that runs past FILE_TIMEOUT_MS is killed with every process it started and reported as timed
//   out; what a job leaves running when it ends is killed too, so that it cannot hold addresses the next files need.
// A failed batch of test files is run again file by file, so the failure has a file's name.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';
import { pathToFileURL } from 'node:url';

/**
 * A job still running after this fails, named, instead of hanging the run. The slowest file
 * (test/up-ambient.test.ts, an ambient `amesh up` cluster) takes about 40 s alone and more than a minute while other
 * jobs load the machine; test/image.test.ts takes minutes the first time on a machine, building the image's Debian
 * base (then cached).
 */
const FILE_TIMEOUT_MS = 600_000;

/**
 * Jobs at once. Integration tests spend part of their time waiting on peers, timers and child processes, so one job
 * more than the machine has cores keeps the cores busy.
 */
const CONCURRENCY = availableParallelism() + 1;

const LINT = 'lint: eslint';
const FORMAT = 'lint: prettier --check';
const UNIT = 'unit tests';

/**
 * Started first, longest first, so the run does not end with one long job on one core; the test files here have a
 * process each, since sharing one would save little of their time and delay the jobs behind them. The run prints
 * its slowest jobs to keep this current; a file missing from it still runs.
 */
const SLOWEST_FIRST = [
  'test/image.test.ts',
  'test/up-ambient.test.ts',
  'test/up-manifest-set.test.ts',
  LINT,
  'test/up-cluster.test.ts',
  'test/control-plane-recovery.test.ts',
  'test/demo.test.ts',
  UNIT,
  FORMAT,
  'test/hbone-mixed-load.test.ts',
  'test/cni-plugin.test.ts',
  'test/istiod-ztunnel.test.ts',
  'test/apiserver-kubectl-create.test.ts',
];

/** Test files that must have a process of their own: test/ztunnel-footprint.test.ts reads its module cache. */
const OWN_PROCESS = ['test/ztunnel-footprint.test.ts'];

/**
 * Integration test files that are not long (not in SLOWEST_FIRST) share a process this many at a time: the modules
 * they load (istiod, ztunnel, the API server, client-node) are then loaded once per batch, not once per file.
 */
const INTEGRATION_BATCH_FILES = 6;

/**
 * Whether every TypeScript file under the roots has its compiled file in dist/, written no earlier than the source
 * (buildIsCurrent, src/up/amesh-command.ts, read from the build itself: with no build there is nothing to run
 * compiled). Then the tests run compiled; otherwise (an edit not yet built) through tsx, so a run never tests stale
 * code.
 */
async function testsAreBuilt() {
  const built = 'dist/src/up/amesh-command.js';
  if (!existsSync(built)) return false;
  const { buildIsCurrent } = await import(pathToFileURL(path.resolve(built)).href);
  return buildIsCurrent('.', ['src', 'test', 'bench']);
}

const args = process.argv.slice(2);
const lint = args.includes('--lint');
const roots = args.filter((a) => a !== '--lint');
const files = [];
const walk = (p) => {
  if (statSync(p).isDirectory()) {
    for (const e of readdirSync(p).sort()) walk(path.join(p, e));
  } else if (p.endsWith('.test.ts')) files.push(path.relative('.', p));
};
for (const r of roots.length > 0 ? roots : ['src', 'test', 'bench']) walk(r);
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}

const compiled = await testsAreBuilt();
/** The command that runs test files: compiled from dist/, or their sources through tsx. */
const testCommand = (testFiles) =>
  compiled
    ? [
        process.execPath,
        '--enable-source-maps',
        '--test-reporter=tap',
        'scripts/test-batch.mjs',
        ...testFiles.map((f) => path.join('dist', f.replace(/\.ts$/, '.js'))),
      ]
    : [process.execPath, '--import', 'tsx', '--test-reporter=tap', 'scripts/test-batch.mjs', ...testFiles];

/** A job: what it is called, the command it runs, and the files it tests (none for a linter). */
const jobs = [];
const batch = (name, batchFiles) => {
  if (batchFiles.length > 0) jobs.push({ name, argv: testCommand(batchFiles), files: batchFiles });
};
const integration = files.filter((f) => f.startsWith('test/'));
const alone = integration.filter((f) => SLOWEST_FIRST.includes(f) || OWN_PROCESS.includes(f));
for (const f of alone) batch(f, [f]);
const batched = integration.filter((f) => !alone.includes(f));
for (let i = 0; i < batched.length; i += INTEGRATION_BATCH_FILES) {
  const some = batched.slice(i, i + INTEGRATION_BATCH_FILES);
  batch(some.length === 1 ? some[0] : `${some[0]} and ${some.length - 1} more`, some);
}
batch(
  UNIT,
  files.filter((f) => !f.startsWith('test/')),
);
if (lint) {
  jobs.push({ name: LINT, argv: ['node_modules/.bin/eslint', 'src', 'test', 'bench', 'scripts'], files: [] });
  jobs.push({ name: FORMAT, argv: ['node_modules/.bin/prettier', '--check', '.'], files: [] });
}
const rank = (name) => {
  const i = SLOWEST_FIRST.indexOf(name);
  return i === -1 ? SLOWEST_FIRST.length : i;
};
jobs.sort((a, b) => rank(a.name) - rank(b.name));

const COUNTS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'];
const totals = Object.fromEntries(COUNTS.map((k) => [k, 0]));
const failed = [];
const durations = [];
const running = new Set();

/** Kills a job's process group: the job's process and everything it started that is still there. */
const killGroup = (child) => {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
};

/** Runs one job, prints its output when it ends, and resolves with its verdict (undefined when it passed). */
function runJob(job, { count = true } = {}) {
  return new Promise((resolve) => {
    const start = performance.now();
    const [cmd, ...argv] = job.argv;
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    running.add(child);
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    let verdict;
    const timer = setTimeout(() => {
      verdict = `timed out after ${FILE_TIMEOUT_MS / 1000} s`;
      killGroup(child);
    }, FILE_TIMEOUT_MS);
    // At exit, not at close: a process the job left behind may hold its output open.
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (verdict === undefined && code !== 0) verdict = `exited with ${signal ?? code}`;
      killGroup(child);
    });
    child.once('error', (e) => {
      verdict = e.message;
    });
    child.once('close', () => {
      running.delete(child);
      const seconds = (performance.now() - start) / 1000;
      durations.push([seconds, job.name]);
      if (count) for (const k of COUNTS) totals[k] += Number(new RegExp(`^# ${k} (\\d+)$`, 'm').exec(out)?.[1] ?? 0);
      process.stdout.write(
        `# ${job.name} (${seconds.toFixed(1)} s)${verdict === undefined ? '' : `: ${verdict}`}\n${out}`,
      );
      resolve(verdict);
    });
  });
}

/** Runs a job; when a batch of several files fails, runs each of its files alone to name the ones that fail. */
async function runNamed(job) {
  const verdict = await runJob(job);
  if (verdict === undefined) return;
  if (job.files.length < 2) {
    failed.push(`${job.name}: ${verdict}`);
    return;
  }
  process.stdout.write(`# ${job.name} failed (${verdict}): running its files one by one\n`);
  let named = 0;
  for (const f of job.files) {
    const v = await runJob({ name: f, argv: testCommand([f]), files: [f] }, { count: false });
    if (v !== undefined) {
      failed.push(`${f}: ${v}`);
      named++;
    }
  }
  if (named === 0) failed.push(`${job.name}: ${verdict}, though each of its files passes alone`);
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    for (const child of running) killGroup(child);
    process.exit(130);
  });
}

if (!compiled)
  console.log('# dist/ is older than the sources: running them through tsx (npm run build to run compiled)');
const start = performance.now();
const queue = [...jobs];
const worker = async () => {
  for (let job = queue.shift(); job !== undefined; job = queue.shift()) await runNamed(job);
};
await Promise.all(Array.from({ length: Math.min(CONCURRENCY, jobs.length) }, worker));

durations.sort((a, b) => b[0] - a[0]);
console.log(`# files ${files.length} in ${jobs.length} jobs, ${CONCURRENCY} at a time${compiled ? ', compiled' : ''}`);
for (const k of COUNTS) console.log(`# ${k} ${totals[k]}`);
console.log(`# duration_ms ${Math.round(performance.now() - start)}`);
console.log(
  `# slowest: ${durations
    .slice(0, 10)
    .map(([s, f]) => `${f} ${s.toFixed(1)} s`)
    .join(', ')}`,
);
for (const f of failed) console.log(`# failed: ${f}`);
process.exit(failed.length === 0 ? 0 : 1);
