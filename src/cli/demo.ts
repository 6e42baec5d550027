import { Command } from '@commander-js/extra-typings';
import { runAmbientDemo } from '../demo/ambient-demo.js';
import { runLocalMeshDemo } from '../demo/local-mesh-demo.js';
import { UP_DEFAULTS } from '../up/up-config.js';
import { fatal } from './fatal.js';

export function demoCommand(): Command {
  return new Command('demo')
    .description(
      'a tour of ambient mode (root): amesh up on examples/mesh, an unchanged curl captured across nodes over mTLS, the identities, a policy that denies, metrics; then teardown',
    )
    .option('--keep', 'leave the cluster (or, with --socks5, the mesh) running until Ctrl-C')
    .option(
      '--data-dir <dir>',
      "the cluster's data dir, for amesh exec, logs and kubectl while it runs",
      UP_DEFAULTS.dataDir,
    )
    .option('--name <name>', "the cluster's name: prefixes its network namespaces and links", UP_DEFAULTS.name)
    .option(
      '--l7',
      "then the L7 step: a waypoint for backend (examples/l7), an HTTPRoute to v2 by header, DELETE /admin refused, a path that needs a JWT, and the waypoint's request metrics",
    )
    .option(
      '--socks5',
      'the tour without root: istiod serving examples/local-mesh and two ztunnels on loopback, the client entering the mesh through SOCKS5',
    )
    .action(async (o) => {
      try {
        if (o.socks5 === true) await runLocalMeshDemo({ keep: o.keep === true });
        else await runAmbientDemo({ keep: o.keep === true, dataDir: o.dataDir, name: o.name, l7: o.l7 === true });
      } catch (e) {
        fatal(e);
      }
    });
}
