import { Command } from '@commander-js/extra-typings';
import { describeError } from '../lib/errors.js';
import { LogControl } from '../lib/log.js';
import { loadWaypointConfig } from '../waypoint/waypoint-config.js';
import { startGatewayProxy, startWaypointProxy } from '../waypoint/waypoint-proxy.js';
import { fatal } from './fatal.js';

/**
 * `amesh proxy waypoint|router`: the arguments of Istio's waypoint and kube-gateway templates (`pilot-agent proxy
 * waypoint|router ...`).
 */
export function proxyCommand(): Command {
  const proxy = new Command('proxy').description('run a mesh proxy, as Istio\'s pilot-agent "proxy" does');
  proxy.addCommand(
    proxyMode(
      'waypoint',
      "run a waypoint: HBONE on the pod's IP:15008 for the services and workloads bound to it, configured by istiod (env as Istio's waypoint template sets it: POD_NAME, POD_NAMESPACE, INSTANCE_IP, CA_ADDR, PROXY_CONFIG, TRUST_DOMAIN)",
    ),
  );
  proxy.addCommand(
    proxyMode(
      'router',
      "run an ingress gateway: the listeners of its Gateway, with their certificates over SDS, configured by istiod (env as Istio's kube-gateway template sets it: POD_NAME, POD_NAMESPACE, INSTANCE_IP, CA_ADDR, PROXY_CONFIG, TRUST_DOMAIN, ISTIO_META_WORKLOAD_NAME)",
    ),
  );
  return proxy;
}

function proxyMode(mode: 'waypoint' | 'router', description: string): Command {
  const component = mode === 'router' ? 'gateway' : 'waypoint';
  return new Command(mode)
    .description(description)
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
        logs = new LogControl({ format: cfg.ztunnel.logFormat, level: cfg.ztunnel.logLevel, component });
        const proxy = await (mode === 'router' ? startGatewayProxy : startWaypointProxy)(cfg, logs);
        const stop = (sig: string): void => {
          logs?.scope(component).info({ signal: sig }, 'received signal');
          void proxy.shutdown().then(() => process.exit(0));
        };
        proxy.once('fatal', (e) => {
          logs?.scope(component).fatal({ error: describeError(e) }, 'cannot go on; exiting');
          void proxy.shutdown().then(() => process.exit(1));
        });
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      } catch (e) {
        fatal(e, logs);
      }
    });
}
