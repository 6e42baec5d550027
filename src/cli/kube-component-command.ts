import { Command } from '@commander-js/extra-typings';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../kube/kube-config.js';
import { LogControl, parseLogFormat } from '../lib/log.js';
import { fatal } from './fatal.js';

/** What a control-plane component runs against the API: it starts, syncs its informers, and stops on a signal. */
export interface KubeComponent {
  readonly synced: Promise<void>;
  start(): void;
  stop(): Promise<void>;
}

/**
 * The command of a component that works through a Kubernetes API only (`amesh controller-manager`, `amesh
 * scheduler`): `--kubeconfig` and `--log-level`, the line `<what> synced` once its informers are, and an orderly
 * stop on SIGTERM or SIGINT.
 */
export function kubeComponentCommand(
  o: { name: string; description: string; kubeconfigHelp: string; synced: string },
  make: (kc: KubeConfig, logs: LogControl) => KubeComponent,
): Command {
  return new Command(o.name)
    .description(o.description)
    .option('--kubeconfig <file>', `${o.kubeconfigHelp} (default: KUBECONFIG, else the in-cluster service account)`)
    .option('--log-level <level>', 'log level, or scope=level list', 'info')
    .action(async (flags) => {
      let logs: LogControl | undefined;
      try {
        const format = parseLogFormat(process.env);
        const kc = loadKubeConfig(flags.kubeconfig);
        logs = new LogControl({ format, level: flags.logLevel, component: o.name });
        const component = make(kc, logs);
        component.start();
        await component.synced;
        logs.scope('main').info({ server: kc.getCurrentCluster()?.server }, o.synced);
        const stop = (): void => void component.stop().then(() => process.exit(0));
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      } catch (e) {
        fatal(e, logs);
      }
    });
}
