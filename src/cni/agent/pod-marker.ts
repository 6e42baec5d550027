/**
 * The node agent's writes to the Kubernetes API about a pod: the `ambient.istio.io/redirection` annotation as a
 * JSON merge patch on the `status` subresource (istio cni/pkg/util/podutil.go: pods/status is the lower privilege,
 * and it may change metadata), and a Warning Event when ztunnel does not take the pod, so `kubectl describe pod`
 * shows why it is pending.
 */
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { MeshError } from '../../lib/errors.js';
import { EventRecorder } from '../../kube/event-recorder.js';
import { kubeStatus, describeKubeError } from '../../kube/kube-status.js';
import { REDIRECTION_ANNOTATION, REDIRECTION_ENABLED, REDIRECTION_PENDING } from './pod-enrollment.js';

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** The Event source, as Istio's node agent DaemonSet is named. */
export const EVENT_SOURCE_COMPONENT = 'istio-cni-node';
export const ZTUNNEL_ADD_FAILED_REASON = 'ZtunnelAddFailed';

export class PodMarker {
  private readonly core: CoreV1Api;
  private readonly events: EventRecorder;

  constructor(kc: KubeConfig, nodeName: string) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.events = new EventRecorder(kc, EVENT_SOURCE_COMPONENT, nodeName);
  }

  enrolled(pod: V1Pod): Promise<void> {
    return this.annotate(pod, REDIRECTION_ENABLED, false);
  }

  pending(pod: V1Pod): Promise<void> {
    return this.annotate(pod, REDIRECTION_PENDING, false);
  }

  /** Removes the annotation; a pod already gone is not an error. */
  unenrolled(pod: V1Pod): Promise<void> {
    return this.annotate(pod, null, true);
  }

  /** Records a Warning Event on the pod. */
  async warn(pod: V1Pod, reason: string, message: string): Promise<void> {
    try {
      await this.events.record({ apiVersion: 'v1', kind: 'Pod', metadata: pod.metadata }, 'Warning', reason, message);
    } catch (e) {
      throw new MeshError(
        'AGENT_ERR_KUBE_API',
        `cannot record Event ${reason} on pod ${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}: ${describeKubeError(e)}`,
        { cause: e },
      );
    }
  }

  private async annotate(pod: V1Pod, value: string | null, goneIsFine: boolean): Promise<void> {
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    try {
      await this.core.patchNamespacedPodStatus(
        { name, namespace, body: { metadata: { annotations: { [REDIRECTION_ANNOTATION]: value } } } },
        MERGE_PATCH,
      );
    } catch (e) {
      if (goneIsFine && kubeStatus(e)?.code === 404) return;
      throw new MeshError(
        'AGENT_ERR_KUBE_API',
        `cannot ${value === null ? 'remove' : `set to ${value}`} the ${REDIRECTION_ANNOTATION} annotation of pod ${namespace}/${name}: ${describeKubeError(e)}`,
        { cause: e },
      );
    }
  }
}
