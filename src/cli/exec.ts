import { Command } from '@commander-js/extra-typings';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { MeshError } from '../lib/errors.js';
import { UP_DEFAULTS } from '../up/up-config.js';
import { UpDataDir } from '../up/up-data-dir.js';
import { fatal } from './fatal.js';

/** `NS/POD` (or `POD` in the default namespace), as kubectl names a pod. */
export function parsePodRef(ref: string): { namespace: string; name: string } {
  const parts = ref.split('/');
  if (parts.length > 2 || parts.some((p) => p === ''))
    throw new MeshError('AMESH_ERR_CONFIG', `"${ref}" is not NAMESPACE/POD`);
  return parts.length === 2 ? { namespace: parts[0]!, name: parts[1]! } : { namespace: 'default', name: parts[0]! };
}

/** `amesh exec`: runs a command inside a pod's (or a node's) network namespace of an `amesh up` cluster. */
export function execCommand(): Command<[string[]], { node?: string | undefined; dataDir: string }> {
  return new Command('exec')
    .description(
      "run a command in a pod's network namespace (NS/POD -- CMD), or a node's (--node NODE -- CMD), of the amesh up cluster",
    )
    .argument('<args...>', 'NS/POD -- CMD [ARGS...], or with --node: -- CMD [ARGS...]')
    .option('--node <node>', "run in this node's network namespace (where its ztunnel and node agent listen)")
    .option('--data-dir <dir>', 'the data dir amesh up uses', UP_DEFAULTS.dataDir)
    .passThroughOptions()
    .action(async (operands, o) => {
      try {
        // Options stop at NS/POD (passThroughOptions), so a `--` before the command arrives as an operand.
        const dash = operands.indexOf('--');
        const args = dash < 0 ? operands : [...operands.slice(0, dash), ...operands.slice(dash + 1)];
        const dataDir = new UpDataDir(path.resolve(o.dataDir));
        let netns: string;
        let cmd: string[];
        if (o.node !== undefined) {
          netns = (await dataDir.node(o.node)).netns;
          cmd = args;
        } else {
          const { namespace, name } = parsePodRef(args[0] ?? '');
          // A torn-down cluster keeps its pods' sandbox records with their logs, not their namespaces.
          await dataDir.readCluster();
          netns = (await dataDir.sandbox(namespace, name)).record.netns;
          cmd = args.slice(1);
        }
        if (cmd.length === 0) throw new MeshError('AMESH_ERR_CONFIG', 'no command: amesh exec NS/POD -- CMD [ARGS...]');
        const r = spawnSync('ip', ['netns', 'exec', netns, ...cmd], {
          stdio: 'inherit',
          env: { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env['PATH'] ?? ''}` },
        });
        if (r.error !== undefined) throw r.error;
        process.exitCode = r.status ?? 1;
      } catch (e) {
        fatal(e);
      }
    });
}
