import { Command } from '@commander-js/extra-typings';
import { LogControl } from '../lib/log.js';
import { APISERVER_DEFAULTS, loadApiServerConfig } from '../apiserver/config.js';
import { ApiServer } from '../apiserver/api-server.js';
import { fatal } from './fatal.js';

export function apiserverCommand(): Command {
  return new Command('apiserver')
    .description('run the embedded Kubernetes API server (kubectl works against DATA_DIR/kubeconfig)')
    .option(
      '--data-dir <dir>',
      'where the store, the cluster CA and the admin kubeconfig live (mode 0700)',
      APISERVER_DEFAULTS.dataDir,
    )
    .option('--listen <host:port>', 'HTTPS address', APISERVER_DEFAULTS.listen)
    .option('--service-cidr <cidr>', 'range Service ClusterIPs are allocated from', APISERVER_DEFAULTS.serviceCidr)
    .option(
      '--event-history <n>',
      'events kept for watches to resume from; older versions get 410 Expired',
      String(APISERVER_DEFAULTS.eventHistory),
    )
    .option('--log-level <level>', 'log level, or scope=level list')
    .action(async (o) => {
      let logs: LogControl | undefined;
      try {
        const cfg = loadApiServerConfig(o);
        logs = new LogControl({ format: cfg.logFormat, level: cfg.logLevel, component: 'apiserver' });
        logs.apply(cfg.logLevel);
        const api = await ApiServer.start(cfg, logs);
        const stop = (): void => void api.stop().then(() => process.exit(0));
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      } catch (e) {
        fatal(e, logs);
      }
    });
}
