/**
 * How to start `amesh` as a child process: `amesh up` runs each node's agent and ztunnel this way, and the demo and
 * the tests run whole components so.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DATA_PATH_NODE_FLAGS } from '../lib/node-flags.js';

/** The CLI's entry point in the build, relative to the source tree. */
const BUILT_MAIN = path.join('dist', 'src', 'cli', 'main.js');

/**
 * Whether the build in `dist/` of the source tree at `root` is current: every source file in `src/` has its compiled
 * file, written no earlier than the source. Each file is compared with its own output, not with one build stamp:
 * `tsc --noEmit` rewrites `dist/.tsbuildinfo` without writing any output. A false "not current" (an output tsc chose
 * not to rewrite) only costs the slower start through tsx.
 */
export function buildIsCurrent(root: string): boolean {
  const src = path.join(root, 'src');
  const stale = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((e) => {
      const file = path.join(dir, e.name);
      if (e.isDirectory()) return stale(file);
      if (!e.name.endsWith('.ts') || e.name.endsWith('.d.ts')) return false;
      const out = path.join(root, 'dist', path.relative(root, file)).replace(/\.ts$/, '.js');
      return !existsSync(out) || statSync(file).mtimeMs > statSync(out).mtimeMs;
    });
  return existsSync(path.join(root, BUILT_MAIN)) && !stale(src);
}

let fromSource: { cmd: string; args: string[] } | undefined;

/**
 * The `amesh` entry point with the data-path Node flags. Compiled, it is the `main.js` beside this file's directory.
 * Run from the source tree (tests, development), it is the build in `dist/` when that is current, else the source
 * through tsx, which costs each process about a second of CPU more to start (the suite starts over a hundred).
 */
export function ameshCommand(): { cmd: string; args: string[] } {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const js = path.resolve(here, '../cli/main.js');
  if (existsSync(js)) return { cmd: process.execPath, args: [...DATA_PATH_NODE_FLAGS, js] };
  if (fromSource === undefined) {
    const root = path.resolve(here, '../..');
    fromSource = {
      cmd: process.execPath,
      args: buildIsCurrent(root)
        ? [...DATA_PATH_NODE_FLAGS, path.join(root, BUILT_MAIN)]
        : [...DATA_PATH_NODE_FLAGS, '--import', 'tsx', path.resolve(here, '../cli/main.ts')],
    };
  }
  return { cmd: fromSource.cmd, args: [...fromSource.args] };
}
