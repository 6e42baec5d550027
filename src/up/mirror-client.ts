/**
 * The mirror pods of a kubelet's static pods (k8s.io/kubernetes pkg/kubelet/pod/mirror_client.go): a copy of each
 * static pod in the API, annotated `kubernetes.io/config.mirror` with the static pod's hash and owned by its Node,
 * so `kubectl get pods` lists what the kubelet runs on its own and the kubelet's status of it. The API server
 * gives a mirror its own uid; the static pod's is in the annotation.
 */
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { CONFIG_HASH_ANNOTATION } from './static-pod-source.js';

export const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

export const isMirrorPod = (p: V1Pod): boolean => p.metadata?.annotations?.[MIRROR_ANNOTATION] !== undefined;

/** The hash of the static pod that `mirror` is the copy of. */
export const mirrorHash = (mirror: V1Pod): string | undefined => mirror.metadata?.annotations?.[MIRROR_ANNOTATION];

export class MirrorClient {
  private readonly core: CoreV1Api;

  constructor(
    kc: KubeConfig,
    private readonly node: { readonly name: string; readonly uid: () => string | undefined },
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
  }

  /** Creates the mirror of static pod `pod`; one that exists already is left as it is. */
  async create(pod: V1Pod): Promise<void> {
    const mirror: V1Pod = { apiVersion: 'v1', kind: 'Pod', metadata: structuredClone(pod.metadata), spec: pod.spec };
    const metadata = (mirror.metadata ??= {});
    delete metadata.uid;
    metadata.annotations = Object.assign(metadata.annotations ?? {}, {
      [MIRROR_ANNOTATION]: pod.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] ?? '',
    });
    const nodeUid = this.node.uid();
    if (nodeUid !== undefined)
      metadata.ownerReferences = [
        { apiVersion: 'v1', kind: 'Node', name: this.node.name, uid: nodeUid, controller: true },
      ];
    await this.core
      .createNamespacedPod({ namespace: metadata.namespace ?? 'default', body: mirror })
      .catch((e: unknown) => {
        if ((e as { code?: number }).code !== 409) throw e;
      });
  }

  /** Deletes mirror pod `mirror` at once (grace 0), and only that one: its uid is the precondition. */
  async delete(mirror: V1Pod): Promise<void> {
    const { name = '', namespace = '', uid } = mirror.metadata ?? {};
    await this.core
      .deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0, body: { preconditions: { uid } } })
      .catch((e: unknown) => {
        const code = (e as { code?: number }).code;
        if (code !== 404 && code !== 409) throw e;
      });
  }
}
