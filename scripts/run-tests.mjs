#!/usr/bin/env node
// Runs every test: unit tests (src/**/*.test.ts, bench/**/*.test.ts) and integration tests (test/**/*.test.ts), through
// node:test with tsx, as many files at once as the machine has cores. Arguments name roots or single files to run
// instead (node scripts/run-tests.mjs test/ipv6.test.ts src/ztunnel). Node 20 does not expand globs, so the files
// are listed here.
import { readdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import path from 'node:path';

/**
 * A file that runs longer than this fails as timed out, named, instead of hanging the run: Node 20 applies
 * --test-timeout to each file as a whole. The slowest file (test/up-ambient.test.ts, two `amesh up` clusters) takes
 * about 110 s alone and up to twice that while other files load the machine.
 */
const FILE_TIMEOUT_MS = 300_000;

/**
 * Started first, so the longest files do not start last and leave the other cores idle at the end of the run.
 * Only the order depends on this list: a file missing from it still runs.
 */
const SLOWEST_FIRST = [
  'test/up-ambient.test.ts',
  'test/up-cluster.test.ts',
  'test/demo.test.ts',
  'test/control-plane-recovery.test.ts',
  'test/hbone-connection-lost.test.ts',
  'test/istiod-ztunnel.test.ts',
  'test/cni-plugin.test.ts',
  'test/bad-input.test.ts',
  'test/hbone-mixed-load.test.ts',
];

const roots = process.argv.length > 2 ? process.argv.slice(2) : ['src', 'test', 'bench'];
const files = [];
const walk = (p) => {
  if (statSync(p).isDirectory()) {
    for (const e of readdirSync(p).sort()) walk(path.join(p, e));
  } else if (p.endsWith('.test.ts')) files.push(p);
};
for (const r of roots) walk(r);
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const rank = (f) => {
  const i = SLOWEST_FIRST.indexOf(path.relative('.', f));
  return i === -1 ? SLOWEST_FIRST.length : i;
};
files.sort((a, b) => rank(a) - rank(b));
const r = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${availableParallelism()}`,
    `--test-timeout=${FILE_TIMEOUT_MS}`,
    ...files,
  ],
  { stdio: 'inherit' },
);
process.exit(r.status ?? 1);
