import type { Command } from '@commander-js/extra-typings';
import { ControllerManager } from '../controllers/controller-manager.js';
import { kubeComponentCommand } from './kube-component-command.js';

/**
 * `amesh controller-manager`: kube-controller-manager's Deployment, ReplicaSet, DaemonSet, StatefulSet,
 * EndpointSlice, Job, CronJob, node lifecycle and ServiceAccount controllers and the root CA publisher, so
 * Deployments become ReplicaSets, DaemonSets a pod per node, and Services get their EndpointSlices, in amesh's own
 * API server (`amesh scheduler` places the pods). A real cluster runs its own.
 */
export function controllerManagerCommand(): Command {
  return kubeComponentCommand(
    {
      name: 'controller-manager',
      description:
        'run the Deployment, ReplicaSet, DaemonSet, StatefulSet, EndpointSlice, Job, CronJob and node lifecycle controllers against a Kubernetes API',
      kubeconfigHelp: 'the API to control',
      synced: 'controllers synced',
    },
    (kc, logs) => new ControllerManager(kc, logs),
  );
}
