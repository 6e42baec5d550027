/**
 * kube-controller-manager's part that amesh runs (k8s.io/kubernetes `cmd/kube-controller-manager`): the
 * Deployment, ReplicaSet, DaemonSet, StatefulSet, EndpointSlice, Job, CronJob, node lifecycle and ServiceAccount
 * controllers and the root CA publisher, all reading one SharedInformerFactory, so each resource they read is listed
 * and watched once. `amesh controller-manager` runs it; placing pods on nodes is kube-scheduler's, `amesh scheduler`.
 */
import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import type { LogControl } from '../lib/log.js';
import { CronJobController } from './cron-job-controller.js';
import { DaemonSetController } from './daemon-set-controller.js';
import { DeploymentController } from './deployment-controller.js';
import { EndpointSliceController } from './endpoint-slice-controller.js';
import { JobController } from './job-controller.js';
import { NodeLifecycleController } from './node-lifecycle-controller.js';
import { ReplicaSetController } from './replica-set-controller.js';
import { RootCaCertPublisher } from './root-ca-cert-publisher.js';
import { ServiceAccountController } from './service-account-controller.js';
import { StatefulSetController } from './stateful-set-controller.js';

/** What the manager runs: each controller reconciles once its informers have synced, until stopped. */
interface Controller {
  readonly synced: Promise<void>;
  start(): void;
  stop(): void;
}

/**
 * The CA that the root CA publisher hands pods: the kubeconfig's (kube-controller-manager is given it as
 * --root-ca-file); none when the kubeconfig trusts the system's CAs.
 */
function clusterCa(kc: KubeConfig): string | undefined {
  const c = kc.getCurrentCluster();
  if (c?.caData !== undefined) return Buffer.from(c.caData, 'base64').toString();
  return c?.caFile === undefined ? undefined : readFileSync(c.caFile, 'utf8');
}

export class ControllerManager {
  private readonly informers: SharedInformerFactory;
  private readonly controllers: readonly Controller[];
  /** Resolves once every controller's informers have listed, when the controllers start reconciling. */
  readonly synced: Promise<void>;

  constructor(kc: KubeConfig, logs: LogControl) {
    const rootCa = clusterCa(kc);
    this.informers = new SharedInformerFactory(kc, logs.scope('informers'));
    this.controllers = [
      new DeploymentController(kc, this.informers, logs.scope('deployment')),
      new ReplicaSetController(kc, this.informers, logs.scope('replicaset')),
      new DaemonSetController(kc, this.informers, logs.scope('daemonset')),
      new StatefulSetController(kc, this.informers, logs.scope('statefulset')),
      new EndpointSliceController(kc, this.informers, logs.scope('endpointslice')),
      new JobController(kc, this.informers, logs.scope('job')),
      new CronJobController(kc, this.informers, logs.scope('cronjob')),
      new NodeLifecycleController(kc, this.informers, logs.scope('nodelifecycle')),
      new ServiceAccountController(kc, this.informers, logs.scope('serviceaccount')),
      ...(rootCa === undefined
        ? []
        : [new RootCaCertPublisher(kc, this.informers, rootCa, logs.scope('root-ca-cert-publisher'))]),
    ];
    this.synced = Promise.all(this.controllers.map((c) => c.synced)).then(() => undefined);
  }

  start(): void {
    for (const c of this.controllers) c.start();
    this.informers.start();
  }

  /** Stops the controllers' queues, then the informers they read. */
  async stop(): Promise<void> {
    for (const c of this.controllers) c.stop();
    await this.informers.stop();
  }
}
