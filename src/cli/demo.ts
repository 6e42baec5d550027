import { Command } from '@commander-js/extra-typings';
import { runLocalMeshDemo } from '../demo/local-mesh-demo.js';
import { fatal } from './fatal.js';

export function demoCommand(): Command {
  return new Command('demo')
    .description('a local mesh tour: two ztunnels (two nodes), echo workloads, mTLS, a policy deny and metrics')
    .option('--keep', 'leave the mesh running until Ctrl-C')
    .action(async (o) => {
      try {
        await runLocalMeshDemo({ keep: o.keep === true });
      } catch (e) {
        fatal(e);
      }
    });
}
