import { Command } from '@commander-js/extra-typings';
import { DeploymentController } from '../controllers/deployment-controller.js';
import { ReplicaSetController } from '../controllers/replica-set-controller.js';
import { Scheduler } from '../controllers/scheduler.js';
import { loadKubeConfig } from '../kube/kube-config.js';
import { LogControl, parseLogFormat } from '../lib/log.js';
import { fatal } from './fatal.js';

/**
 * `amesh controller-manager`: kube-controller-manager's Deployment and ReplicaSet controllers and, in the same
 * process (one machine needs no separate kube-scheduler), the scheduler, so ordinary Deployments become
 * ReplicaSets and pods placed on nodes in amesh's own API server. A real cluster runs its own.
 */
export function controllerManagerCommand(): Command {
  return new Command('controller-manager')
    .description('run the Deployment and ReplicaSet controllers and the pod scheduler against a Kubernetes API')
    .option('--kubeconfig <file>', 'the API to control (default: KUBECONFIG, else the in-cluster service account)')
    .option('--log-level <level>', 'log level, or scope=level list', 'info')
    .action(async (o) => {
      let logs: LogControl | undefined;
      try {
        const format = parseLogFormat(process.env);
        const kc = loadKubeConfig(o.kubeconfig);
        logs = new LogControl({ format, level: o.logLevel, component: 'controller-manager' });
        const controllers = [
          new DeploymentController(kc, logs.scope('deployment')),
          new ReplicaSetController(kc, logs.scope('replicaset')),
          new Scheduler(kc, logs.scope('scheduler')),
        ];
        for (const c of controllers) c.start();
        await Promise.all(controllers.map((c) => c.synced));
        logs.scope('main').info({ server: kc.getCurrentCluster()?.server }, 'controllers synced');
        const stop = (): void => void Promise.all(controllers.map((c) => c.stop())).then(() => process.exit(0));
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      } catch (e) {
        fatal(e, logs);
      }
    });
}
