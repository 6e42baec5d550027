/**
 * How to start `amesh` as a child process: `amesh up` runs each node's agent and ztunnel this way, and the demo and
 * the tests run whole components so.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { DATA_PATH_NODE_FLAGS } from '../lib/node-flags.js';
import { packageRoot } from '../lib/package-root.js';

/** The CLI's bundle (scripts/finish-build.mjs), tsc's output, and the source, relative to the package root. */
const BUNDLE = path.join('dist', 'bundle', 'amesh.js');
const BUILT_MAIN = path.join('dist', 'src', 'cli', 'main.js');
const SOURCE_MAIN = path.join('src', 'cli', 'main.ts');

/** Whether any file under `dir` that `counts` was modified after `time`. */
function modifiedAfter(dir: string, time: number, counts: (name: string) => boolean): boolean {
  return readdirSync(dir, { withFileTypes: true }).some((e) => {
    const file = path.join(dir, e.name);
    if (e.isDirectory()) return modifiedAfter(file, time, counts);
    return counts(e.name) && statSync(file).mtimeMs > time;
  });
}

/** Each TypeScript source under `dirs` of the source tree at `root`, with the file tsc compiles it to in `dist/`. */
export function* compiledFiles(root: string, dirs: readonly string[]): Generator<{ source: string; out: string }> {
  const walk = function* (dir: string): Generator<{ source: string; out: string }> {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const source = path.join(dir, e.name);
      if (e.isDirectory()) yield* walk(source);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
        yield { source, out: path.join(root, 'dist', path.relative(root, source)).replace(/\.ts$/, '.js') };
    }
  };
  for (const d of dirs) yield* walk(path.join(root, d));
}

/**
 * Whether the build in `dist/` of the source tree at `root` is current: every source file under `dirs` has its
 * compiled file, written (or stamped, scripts/finish-build.mjs) no earlier than the source. Each file is compared
 * with its own output, not with one build stamp: `tsc --noEmit` rewrites `dist/.tsbuildinfo` without writing any
 * output.
 */
export function buildIsCurrent(root: string, dirs: readonly string[] = ['src']): boolean {
  if (!existsSync(path.join(root, BUILT_MAIN))) return false;
  for (const { source, out } of compiledFiles(root, dirs))
    if (!existsSync(out) || statSync(source).mtimeMs > statSync(out).mtimeMs) return false;
  return true;
}

/**
 * Whether the bundle at `root` (the CLI's, or `file` relative to the root) was made after every compiled file it is
 * made from (esbuild rewrites it whole).
 */
export function bundleIsCurrent(root: string, file = BUNDLE): boolean {
  const bundle = path.join(root, file);
  if (!existsSync(bundle)) return false;
  return !modifiedAfter(path.join(root, 'dist', 'src'), statSync(bundle).mtimeMs, (n) => n.endsWith('.js'));
}

/**
 * What runs `amesh` from the package at `root`: the bundle, which starts in about half the CPU of tsc's output
 * module by module; in a source tree (tests, development), only while it is current, else tsc's output while that
 * is current, else the source through tsx, which costs each process about a second of CPU more to start.
 */
export function ameshEntry(root: string): string[] {
  if (!existsSync(path.join(root, SOURCE_MAIN))) return [path.join(root, BUNDLE)];
  if (!buildIsCurrent(root)) return ['--import', 'tsx', path.join(root, SOURCE_MAIN)];
  return [path.join(root, bundleIsCurrent(root) ? BUNDLE : BUILT_MAIN)];
}

let entry: string[] | undefined;

/** The `amesh` command with the data-path Node flags (ameshEntry, found once per process). */
export function ameshCommand(): { cmd: string; args: string[] } {
  entry ??= ameshEntry(packageRoot());
  return { cmd: process.execPath, args: [...DATA_PATH_NODE_FLAGS, ...entry] };
}
