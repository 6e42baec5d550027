import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { packageRoot } from '../../src/lib/package-root.js';

/**
 * Compiles `proto/amesh/waypoint/v1/waypoint.proto` (and the Istio protos it imports) into Python modules under `dir`
 * with Debian's protoc, for python3-protobuf to encode and decode the waypoint's resource independently of amesh's
 * generated TypeScript. Returns `dir`, for the Python peer's `sys.path`.
 */
export function waypointProtoPython(dir: string): string {
  const root = path.join(packageRoot(), 'proto');
  execFileSync('protoc', [
    `-I${root}`,
    '-I/usr/include',
    `--python_out=${dir}`,
    ...['amesh/waypoint/v1/waypoint.proto', 'istio/security/authorization.proto', 'istio/workload/workload.proto'].map(
      (p) => path.join(root, p),
    ),
  ]);
  return dir;
}
