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

/**
 * `amesh exec`: runs a command inside a container of a pod of an `amesh up` cluster, as `kubectl exec` does (in its
 * network and mount namespaces, as its user, with its environment: `runc exec`), or in a node's network namespace.
 */
export function execCommand(): Command<
  [string[]],
  { node?: string | undefined; container?: string | undefined; dataDir: string }
> {
  return new Command('exec')
    .description(
      "run a command in a pod's container (NS/POD -- CMD), as kubectl exec does, or in a node's network namespace (--node NODE -- CMD), of the amesh up cluster",
    )
    .argument('<args...>', 'NS/POD -- CMD [ARGS...], or with --node: -- CMD [ARGS...]')
    .option('-c, --container <name>', "the pod's container (default: its first)")
    .option('--node <node>', "run in this node's network namespace (where its ztunnel and node agent listen)")
    .option('--data-dir <dir>', 'the data dir amesh up uses', UP_DEFAULTS.dataDir)
    .passThroughOptions()
    .action(async (operands, o) => {
      try {
        // Options stop at NS/POD (passThroughOptions), so a `--` before the command arrives as an operand.
        const dash = operands.indexOf('--');
        const args = dash < 0 ? operands : [...operands.slice(0, dash), ...operands.slice(dash + 1)];
        const dataDir = new UpDataDir(path.resolve(o.dataDir));
        const cmd = o.node === undefined ? args.slice(1) : args;
        if (cmd.length === 0) throw new MeshError('AMESH_ERR_CONFIG', 'no command: amesh exec NS/POD -- CMD [ARGS...]');
        let argv: string[];
        if (o.node !== undefined) {
          const netns = (await dataDir.node(o.node)).netns;
          argv = ['ip', 'netns', 'exec', netns, ...cmd];
        } else {
          const { namespace, name } = parsePodRef(args[0] ?? '');
          // A torn-down cluster keeps its pods' sandbox records with their logs, not their containers.
          await dataDir.readCluster();
          const { record } = await dataDir.sandbox(namespace, name);
          const container = o.container ?? record.containers[0] ?? '';
          if (!record.containers.includes(container))
            throw new MeshError(
              'AMESH_ERR_CONFIG',
              `container ${container} is not valid for pod ${namespace}/${name}: its containers are ${record.containers.join(', ')}`,
            );
          argv = ['runc', '--root', dataDir.runcRoot, 'exec', `${record.uid}-${container}`, ...cmd];
        }
        const r = spawnSync(argv[0]!, argv.slice(1), {
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
