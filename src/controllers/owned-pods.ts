/**
 * What every controller that makes pods does alike (k8s.io/kubernetes `pkg/controller/controller_utils.go`
 * PodControl with ControllerExpectations): it follows the events of the pods it controls as events of their owner,
 * counting creations and deletions against its expectations, and a create or delete that fails is counted as
 * seen, since its event will never come.
 */
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import type { RestartingInformer } from '../kube/informer.js';
import type { Expectations } from './expectations.js';
import { controllerOf } from './owned-objects.js';

/** Queues the owner (`namespace/name`) of every pod a `kind` controls, on each of its events. */
export function followOwnedPods(
  pods: RestartingInformer<V1Pod>,
  kind: string,
  expectations: Expectations,
  enqueue: (ownerKey: string) => void,
): void {
  const on = (p: V1Pod, observe: (key: string) => void): void => {
    const owner = controllerOf(p.metadata);
    if (owner?.kind !== kind) return;
    const key = `${p.metadata?.namespace ?? ''}/${owner.name}`;
    observe(key);
    enqueue(key);
  };
  pods.addEventHandler({
    add: (p) => on(p, (key) => expectations.observedAdd(key)),
    update: (p) => on(p, () => undefined),
    delete: (p) => on(p, (key) => expectations.observedDelete(key)),
  });
}

export async function createOwnedPod(
  core: CoreV1Api,
  expectations: Expectations,
  ownerKey: string,
  body: V1Pod,
): Promise<void> {
  try {
    await core.createNamespacedPod({ namespace: body.metadata?.namespace ?? '', body });
  } catch (e) {
    expectations.observedAdd(ownerKey);
    throw e;
  }
}

/** Deletes a pod; one already gone is no error. */
export async function deleteOwnedPod(
  core: CoreV1Api,
  expectations: Expectations,
  ownerKey: string,
  p: V1Pod,
): Promise<void> {
  try {
    await core.deleteNamespacedPod({ name: p.metadata?.name ?? '', namespace: p.metadata?.namespace ?? '' });
  } catch (e) {
    expectations.observedDelete(ownerKey);
    if ((e as { code?: number }).code !== 404) throw e;
  }
}
