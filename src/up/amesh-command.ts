/**
 * How to start `amesh` as a child process: `amesh up` runs each node's agent and ztunnel this way, and the demo and
 * the tests run whole components so.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DATA_PATH_NODE_FLAGS } from '../lib/node-flags.js';

/** The `amesh` entry point with the data-path Node flags: compiled `dist/` when present, else the source through tsx. */
export function ameshCommand(): { cmd: string; args: string[] } {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const js = path.resolve(here, '../cli/main.js');
  if (existsSync(js)) return { cmd: process.execPath, args: [...DATA_PATH_NODE_FLAGS, js] };
  return {
    cmd: process.execPath,
    args: [...DATA_PATH_NODE_FLAGS, '--import', 'tsx', path.resolve(here, '../cli/main.ts')],
  };
}
