import { Command } from '@commander-js/extra-typings';
import { describeError } from '../lib/errors.js';
import { LogControl } from '../lib/log.js';
import {
  DEFAULT_ADMIN_ADDRESS,
  DEFAULT_METRICS_ADDRESS,
  DEFAULT_READINESS_ADDRESS,
  loadZtunnelConfig,
} from '../ztunnel/config.js';
import { Ztunnel } from '../ztunnel/ztunnel.js';
import { fatal } from './fatal.js';
import { dataPathFlagsMissing } from '../lib/node-flags.js';

export function ztunnelCommand(): Command {
  return new Command('ztunnel')
    .description(
      'run the node L4 proxy (HBONE). Config comes from Istio env names (LOCAL_XDS_PATH, NODE_NAME, TRUST_DOMAIN, ...) and these flags',
    )
    .option('--local-config <file>', 'local config YAML (same as LOCAL_XDS_PATH)')
    .option(
      '--local-ca <dir>',
      'issue certificates from Istio plug-in CA files in DIR (ca-cert.pem, ca-key.pem, root-cert.pem, cert-chain.pem)',
    )
    .option('--admin-address <host:port>', 'admin server (config_dump, logging, quitquitquit)', DEFAULT_ADMIN_ADDRESS)
    .option('--metrics-address <host:port>', 'Prometheus metrics', DEFAULT_METRICS_ADDRESS)
    .option('--readiness-address <host:port>', 'readiness probe', DEFAULT_READINESS_ADDRESS)
    .option('--log-level <level>', 'log level, or scope=level list (default RUST_LOG or info)')
    .option(
      '--node-metrics',
      'also export Node.js runtime metrics (nodejs_*, process_cpu_*, process_resident_memory_bytes, ...); ztunnel exports none of them, and they cost memory',
    )
    .action(async (o) => {
      let logs: LogControl | undefined;
      try {
        const cfg = loadZtunnelConfig(o);
        logs = new LogControl({ format: cfg.logFormat, level: cfg.logLevel, component: 'ztunnel' });
        const missing = dataPathFlagsMissing();
        if (missing !== undefined) logs.scope('ztunnel').warn(missing);
        const zt = await Ztunnel.start(cfg, logs);
        const stop = (sig: string): void => {
          logs?.scope('ztunnel').info({ signal: sig }, 'received signal');
          void zt.shutdown().then(() => process.exit(0));
        };
        zt.once('fatal', (e) => {
          logs?.scope('ztunnel').fatal({ error: describeError(e) }, 'cannot go on; exiting');
          void zt.shutdown().then(() => process.exit(1));
        });
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      } catch (e) {
        fatal(e, logs);
      }
    });
}
