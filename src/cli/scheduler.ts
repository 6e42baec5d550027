import type { Command } from '@commander-js/extra-typings';
import { Scheduler } from '../controllers/scheduler.js';
import { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import { kubeComponentCommand } from './kube-component-command.js';

/**
 * `amesh scheduler`: kube-scheduler's role for amesh's own API server: every pod without a node (and with the
 * default `schedulerName`) is bound to one it fits. A real cluster runs its own.
 */
export function schedulerCommand(): Command {
  return kubeComponentCommand(
    {
      name: 'scheduler',
      description: 'place pods on the nodes they fit, through pods/binding, against a Kubernetes API',
      kubeconfigHelp: 'the API to schedule for',
      synced: 'scheduler synced',
    },
    (kc, logs) => {
      const informers = new SharedInformerFactory(kc, logs.scope('informers'));
      const scheduler = new Scheduler(kc, informers, logs.scope('scheduler'));
      return {
        synced: scheduler.synced,
        start: () => {
          scheduler.start();
          informers.start();
        },
        stop: async () => {
          scheduler.stop();
          await informers.stop();
        },
      };
    },
  );
}
