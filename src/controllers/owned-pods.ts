/**
 * What every controller that makes pods does alike (k8s.io/kubernetes `pkg/controller/controller_utils.go`
 * PodControl with ControllerExpectations): it follows the events of the pods it controls as events of their owner,
 * counting creations and deletions against its expectations, and a create or delete that fails is counted as
 * seen, since its event will never come. Its pods are made from its template (`GetPodFromTemplate`).
 */
import type { CoreV1Api, V1ObjectMeta, V1Pod, V1PodTemplateSpec } from '@kubernetes/client-node';
import type { RestartingInformer } from '../kube/informer.js';
import type { Expectations } from './expectations.js';
import { controllerOf, controllerReference } from './owned-objects.js';

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

/**
 * A pod from `template` for the controller `owner` (`apiVersion`, `kind` and metadata): named `<owner>-<suffix>`,
 * with the template's labels, annotations and spec (copies the caller may change), and `owner` as controller.
 */
export function podFromTemplate(
  apiVersion: string,
  kind: string,
  owner: V1ObjectMeta | undefined,
  template: V1PodTemplateSpec | undefined,
): V1Pod {
  const meta = owner ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${meta.name ?? ''}-`,
      namespace: meta.namespace,
      labels: { ...template?.metadata?.labels },
      annotations: { ...template?.metadata?.annotations },
      ownerReferences: [controllerReference(apiVersion, kind, meta)],
    },
    spec: structuredClone(template?.spec ?? { containers: [] }),
  };
}
