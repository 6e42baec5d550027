/**
 * amesh's package root, the directory of its package.json: the same whether this code runs from `src/` (tsx) or
 * compiled from `dist/src/`, so files outside the build (the addon, `examples/`, test fixtures) are found from it.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

export function packageRoot(): string {
  if (root !== undefined) return root;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  root = dir;
  return root;
}
