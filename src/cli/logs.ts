import { Command } from '@commander-js/extra-typings';
import { createReadStream } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { MeshError } from '../lib/errors.js';
import { UP_DEFAULTS } from '../up/up-config.js';
import { UpDataDir } from '../up/up-data-dir.js';
import { parsePodRef } from './exec.js';
import { fatal } from './fatal.js';

/** `amesh logs`: a container's output (stdout and stderr, as it wrote them) in an `amesh up` cluster. */
export function logsCommand(): Command<[string], { container?: string | undefined; dataDir: string }> {
  return new Command('logs')
    .description("print a container's output in the amesh up cluster")
    .argument('<pod>', 'NS/POD')
    .option('-c, --container <name>', 'the container (needed when the pod has more than one)')
    .option('--data-dir <dir>', 'the data dir amesh up uses', UP_DEFAULTS.dataDir)
    .action(async (ref, o) => {
      try {
        const { namespace, name } = parsePodRef(ref);
        const { dir, record } = await new UpDataDir(path.resolve(o.dataDir)).sandbox(namespace, name);
        const container = o.container ?? (record.containers.length === 1 ? record.containers[0] : undefined);
        if (container === undefined)
          throw new MeshError(
            'AMESH_ERR_CONFIG',
            `a container name must be specified for pod ${namespace}/${name}, choose one of: [${record.containers.join(' ')}]`,
          );
        if (!record.containers.includes(container))
          throw new MeshError(
            'UP_ERR_NOT_FOUND',
            `container ${container} is not valid for pod ${namespace}/${name}; its containers are [${record.containers.join(' ')}]`,
          );
        const file = path.join(dir, `${container}.log`);
        if (
          !(await access(file).then(
            () => true,
            () => false,
          ))
        )
          return;
        await pipeline(createReadStream(file), process.stdout, { end: false });
      } catch (e) {
        fatal(e);
      }
    });
}
