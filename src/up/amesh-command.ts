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
 * Whether the build of the source tree at `root` is newer than every source file in `src/`, so that it runs what the
 * source says. The build's time is that of `dist/.tsbuildinfo` (tsconfig.json): `tsc --build` rewrites it on every
 * build that compiles anything, but rewrites only the outputs whose content changed.
 */
export function buildIsCurrent(root: string): boolean {
  const info = path.join(root, 'dist', '.tsbuildinfo');
  if (!existsSync(path.join(root, BUILT_MAIN)) || !existsSync(info)) return false;
  const builtAt = statSync(info).mtimeMs;
  const newer = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((e) =>
      e.isDirectory() ? newer(path.join(dir, e.name)) : statSync(path.join(dir, e.name)).mtimeMs > builtAt,
    );
  return !newer(path.join(root, 'src'));
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
