import { Command } from '@commander-js/extra-typings';
import { ControllerManager } from '../controllers/controller-manager.js';
import { loadKubeConfig } from '../kube/kube-config.js';
import { LogControl, parseLogFormat } from '../lib/log.js';
import { fatal } from './fatal.js';

/**
 * `amesh controller-manager`: kube-controller-manager's Deployment, ReplicaSet, DaemonSet, StatefulSet,
 * EndpointSlice, Job, CronJob and node lifecycle controllers and, in the same process (one machine needs no
 * separate kube-scheduler), the scheduler, so ordinary
 * Deployments become ReplicaSets, DaemonSets a pod per node, pods are placed on nodes, and Services get their
 * EndpointSlices, in amesh's own API server. A real cluster runs its own.
 */
export function controllerManagerCommand(): Command {
  return new Command('controller-manager')
    .description(
      'run the Deployment, ReplicaSet, DaemonSet, StatefulSet, EndpointSlice, Job, CronJob and node lifecycle controllers and the pod scheduler against a Kubernetes API',
    )
    .option('--kubeconfig <file>', 'the API to control (default: KUBECONFIG, else the in-cluster service account)')
    .option('--log-level <level>', 'log level, or scope=level list', 'info')
    .action(async (o) => {
      let logs: LogControl | undefined;
      try {
        const format = parseLogFormat(process.env);
        const kc = loadKubeConfig(o.kubeconfig);
        logs = new LogControl({ format, level: o.logLevel, component: 'controller-manager' });
        const controllers = new ControllerManager(kc, logs);
        controllers.start();
        await controllers.synced;
        logs.scope('main').info({ server: kc.getCurrentCluster()?.server }, 'controllers synced');
        const stop = (): void => void controllers.stop().then(() => process.exit(0));
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      } catch (e) {
        fatal(e, logs);
      }
    });
}
