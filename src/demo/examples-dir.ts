import path from 'node:path';
import { packageRoot } from '../lib/package-root.js';

/** A directory of the checkout's `examples/`. */
export function examplesDir(name: string): string {
  return path.join(packageRoot(), 'examples', name);
}
