import { Command } from '@commander-js/extra-typings';
import { describeError } from '../lib/errors.js';
import { LogControl } from '../lib/log.js';
import { loadWaypointConfig } from '../waypoint/waypoint-config.js';
import { startWaypointProxy } from '../waypoint/waypoint-proxy.js';
import { fatal } from './fatal.js';

/** `amesh proxy waypoint`: the arguments of Istio's waypoint template (`pilot-agent proxy waypoint ...`). */
export function proxyCommand(): Command {
  const proxy = new Command('proxy').description('run a mesh proxy, as Istio\'s pilot-agent "proxy" does');
  proxy
    .command('waypoint')
    .description(
      "run a waypoint: HBONE on the pod's IP:15008 for the services and workloads bound to it, configured by istiod (env as Istio's waypoint template sets it: POD_NAME, POD_NAMESPACE, INSTANCE_IP, CA_ADDR, PROXY_CONFIG, TRUST_DOMAIN)",
    )
    .option('--domain <domain>', "the pod's DNS domain (<namespace>.svc.<cluster domain>)")
    .option('--serviceCluster <name>', "the proxy's service cluster (<service account>.<namespace>)")
    .option('--proxyLogLevel <level>', "Envoy's log level (accepted, not used)")
    .option('--proxyComponentLogLevel <levels>', "Envoy's component log levels (accepted, not used)")
    .option('--log_output_level <levels>', "Istio's scope:level list, e.g. default:info", 'default:info')
    .option('--log_as_json', 'log JSON lines')
    .action(async (o) => {
      let logs: LogControl | undefined;
      try {
        const cfg = loadWaypointConfig(o);
        logs = new LogControl({ format: cfg.ztunnel.logFormat, level: cfg.ztunnel.logLevel, component: 'waypoint' });
        const wp = await startWaypointProxy(cfg, logs);
        const stop = (sig: string): void => {
          logs?.scope('waypoint').info({ signal: sig }, 'received signal');
          void wp.shutdown().then(() => process.exit(0));
        };
        wp.once('fatal', (e) => {
          logs?.scope('waypoint').fatal({ error: describeError(e) }, 'cannot go on; exiting');
          void wp.shutdown().then(() => process.exit(1));
        });
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      } catch (e) {
        fatal(e, logs);
      }
    });
  return proxy;
}
