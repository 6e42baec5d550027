import { MeshError } from '../lib/errors.js';

/**
 * `amesh up`, `amesh down` and the ambient tour make and remove network namespaces, links, routes and iptables
 * rules, which takes root; checked first, so that nothing (the data dir included) is touched and failed on half way.
 */
export function requireRoot(command: string, hint = 'run it with sudo'): void {
  if (process.getuid?.() === 0) return;
  throw new MeshError(
    'UP_ERR_NOT_ROOT',
    `${command} needs root: it makes and removes network namespaces, links, routes and iptables rules (${hint})`,
  );
}
