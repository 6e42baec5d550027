/**
 * Reads a pod and its namespace from the Kubernetes API for the capture decision, with the kubeconfig the node agent
 * writes for the plugin (istio cni/pkg/plugin/kubernetes.go newK8sClient; plugin.go isAmbientPod GETs both objects).
 * Each GET is bounded: a hung API must fail the ADD (kubelet retries) rather than hold the sandbox forever.
 * This module loads @kubernetes/client-node, which takes most of a second; only an ADD that needs the API imports it.
 */
import { CoreV1Api, KubeConfig, Observable, type ConfigurationOptions } from '@kubernetes/client-node';
import { MeshError } from '../../lib/errors.js';
import { describeKubeError } from '../../kube/kube-status.js';
import type { PodFacts } from './capture-decision.js';

/** Per request; Istio's client has none, but a plugin that never returns blocks the pod's sandbox for good. */
export const KUBE_API_TIMEOUT_MS = 5_000;

/** Options that abort a request after `ms` (client-node's object-style API takes Observable middleware). */
function timeout(ms: number): ConfigurationOptions {
  return {
    middleware: [
      {
        pre: (ctx) => (ctx.setSignal(AbortSignal.timeout(ms)), new Observable(Promise.resolve(ctx))),
        post: (res) => new Observable(Promise.resolve(res)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}

export async function readPodFacts(
  kubeconfigPath: string,
  namespace: string,
  name: string,
  timeoutMs = KUBE_API_TIMEOUT_MS,
): Promise<PodFacts> {
  const kc = new KubeConfig();
  try {
    kc.loadFromFile(kubeconfigPath);
  } catch (e) {
    throw new MeshError(
      'CNI_ERR_KUBE_API',
      `cannot load the plugin's kubeconfig ${kubeconfigPath} (the node agent writes it): ${(e as Error).message}`,
      { cause: e },
    );
  }
  if (kc.getCurrentCluster() === null)
    throw new MeshError('CNI_ERR_KUBE_API', `the kubeconfig ${kubeconfigPath} has no current context with a cluster`);
  const core = kc.makeApiClient(CoreV1Api);
  const read = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (e) {
      throw new MeshError(
        'CNI_ERR_KUBE_API',
        `cannot read ${what} from the Kubernetes API at ${kc.getCurrentCluster()?.server ?? '?'}: ${describeKubeError(e)}`,
        { cause: e },
      );
    }
  };
  const [pod, ns] = await Promise.all([
    read(`pod ${namespace}/${name}`, () => core.readNamespacedPod({ name, namespace }, timeout(timeoutMs))),
    read(`namespace ${namespace}`, () => core.readNamespace({ name: namespace }, timeout(timeoutMs))),
  ]);
  return {
    labels: pod.metadata?.labels ?? {},
    annotations: pod.metadata?.annotations ?? {},
    hostNetwork: pod.spec?.hostNetwork === true,
    namespaceLabels: ns.metadata?.labels ?? {},
  };
}
