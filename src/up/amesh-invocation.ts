/**
 * How the commands `amesh up` and `amesh demo` suggest start `amesh` from a shell: `amesh` when it is on PATH
 * (`npm link`, a global install); else through npm's script in the checkout (`npm ci` puts no `amesh` on PATH),
 * which names the checkout unless the shell is in it.
 */
import path from 'node:path';
import { packageRoot } from '../lib/package-root.js';
import { resolveCommand } from './host-tools.js';

export function ameshInvocation(
  envPath = process.env['PATH'] ?? '',
  cwd = process.cwd(),
  root = packageRoot(),
): string {
  if (resolveCommand('amesh', envPath) !== undefined) return 'amesh';
  return path.resolve(cwd) === path.resolve(root) ? 'npm run -s amesh --' : `npm --prefix ${root} run -s amesh --`;
}
