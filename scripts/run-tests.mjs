#!/usr/bin/env node
// Runs every test: unit tests (src/**/*.test.ts, bench/**/*.test.ts) and integration tests (test/**/*.test.ts), through
// node:test with tsx. Node 20 does not expand globs, so the files are listed here.
import { readdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';

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
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...files], {
  stdio: 'inherit',
});
process.exit(r.status ?? 1);
