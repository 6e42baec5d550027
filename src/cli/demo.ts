import { Command } from '@commander-js/extra-typings';
import { runLocalMeshDemo } from '../demo/local-mesh-demo.js';
import { fatal } from './fatal.js';

export function demoCommand(): Command {
  return new Command('demo')
    .description('a local mesh tour: istiod serving examples/mesh, two ztunnels (two nodes), echo workloads, mTLS, a live policy edit and metrics')
    .option('--keep', 'leave the mesh running until Ctrl-C')
    .action(async (o) => {
      try {
        await runLocalMeshDemo({ keep: o.keep === true });
      } catch (e) {
        fatal(e);
      }
    });
}
