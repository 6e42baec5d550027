import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** A directory of the checkout's `examples/`, found from `src/demo` (tsx) or `dist/src/demo`. */
export function examplesDir(name: string): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return path.resolve(here, here.includes(`${path.sep}dist${path.sep}`) ? '../../..' : '../..', 'examples', name);
}
