/**
 * What a kubelet does for a pod deleted gracefully, for tests that run controllers without kubelets: once a pod has
 * a deletionTimestamp with a grace period left, it is deleted again with grace 0 (and its uid as precondition), as
 * the kubelet does when the pod's containers are gone, so the pod leaves the API as soon as its finalizers allow.
 */
import * as k8s from '@kubernetes/client-node';
import { RestartingInformer } from '../../src/kube/informer.js';
import { listJson } from '../../src/kube/list-json.js';
import type { Logger } from '../../src/lib/log.js';

export class DeletedPodConfirmer {
  private readonly pods: RestartingInformer<k8s.V1Pod>;

  constructor(kc: k8s.KubeConfig, log: Logger) {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const confirm = (p: k8s.V1Pod): void => {
      const meta = p.metadata;
      if (meta?.deletionTimestamp === undefined || (meta.deletionGracePeriodSeconds ?? 0) === 0) return;
      void core
        .deleteNamespacedPod({
          name: meta.name ?? '',
          namespace: meta.namespace ?? '',
          gracePeriodSeconds: 0,
          body: { preconditions: { uid: meta.uid } },
        })
        .catch(() => undefined);
    };
    this.pods = new RestartingInformer<k8s.V1Pod>(
      kc,
      '/api/v1/pods',
      () => listJson(kc, '/api/v1/pods'),
      { add: confirm, update: confirm },
      log,
    );
  }

  start(): Promise<void> {
    this.pods.start();
    return this.pods.synced;
  }

  stop(): Promise<void> {
    return this.pods.stop();
  }
}
