import { Command } from '@commander-js/extra-typings';
import { LogControl, parseLogFormat } from '../lib/log.js';
import { runKubeletProcess } from '../up/kubelet-process.js';
import { fatal } from './fatal.js';

/** `amesh kubelet`: one node of an `amesh up` cluster, the process `up` runs and restarts for each of its nodes. */
export function kubeletCommand(): Command {
  return new Command('kubelet')
    .description("run one node's kubelet of an amesh up cluster (amesh up starts and restarts it)")
    .requiredOption('--data-dir <dir>', "the cluster's data directory (amesh up's --data-dir)")
    .requiredOption('--hostname-override <node>', 'the node this kubelet runs (node1, node2, ...)')
    .option('--pod-manifest-path <dir>', 'a directory of static pod manifests, run without the API server')
    .option('--exit-on-stdin-close', 'exit, leaving the pods running, when stdin closes (its supervisor is gone)')
    .option('--log-level <level>', 'log level, or scope=level list', 'info')
    .action(async (o) => {
      let logs: LogControl | undefined;
      try {
        logs = new LogControl({ format: parseLogFormat(process.env), level: o.logLevel, component: 'kubelet' });
        await runKubeletProcess(
          {
            dataDir: o.dataDir,
            node: o.hostnameOverride,
            ...(o.podManifestPath === undefined ? {} : { podManifestPath: o.podManifestPath }),
            exitWithStdin: o.exitOnStdinClose === true,
          },
          logs,
        );
      } catch (e) {
        fatal(e, logs);
      }
    });
}
