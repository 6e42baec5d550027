/**
 * Whether ADD hands a pod to the node agent for capture, in the order Istio's plugin decides (istio
 * cni/pkg/plugin/plugin.go CmdAdd, doAddRun, isAmbientPod; cni/pkg/util/enablement_selector.go Matches). The first
 * step needs only the CNI arguments, so the node agent's own pods and pods in excluded namespaces never wait on the
 * Kubernetes API; the second needs the pod and its namespace as the API has them.
 */
import type { K8sArgs } from './k8s-args.js';
import type { PluginConfig } from './plugin-config.js';

/** The node agent's DaemonSet pods (istio cni/pkg/plugin/plugin.go isCNIPod). */
export const AGENT_POD_PREFIX = 'istio-cni-node-';
/** Set by the sidecar injector; ztunnel and a sidecar in one pod are not supported (Istio opts such pods out). */
export const SIDECAR_STATUS_ANNOTATION = 'sidecar.istio.io/status';

export type SkipReason =
  | 'node agent pod'
  | 'not a Kubernetes pod'
  | 'excluded namespace'
  | 'ambient disabled'
  | 'host network'
  | 'has a sidecar'
  | 'not selected';

export type CaptureDecision = { readonly capture: true } | { readonly capture: false; readonly reason: SkipReason };

/** What the API says about the pod, as far as the decision needs it. */
export interface PodFacts {
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly hostNetwork: boolean;
  readonly namespaceLabels: Readonly<Record<string, string>>;
}

const skip = (reason: SkipReason): CaptureDecision => ({ capture: false, reason });

/**
 * The decision from the CNI arguments alone, or `undefined` when it takes the pod's facts (`decideForPod`).
 * With `ambient_enabled` false Istio goes on to its sidecar path, which amesh does not have: nothing is captured.
 */
export function decideBeforeLookup(
  cfg: Pick<PluginConfig, 'podNamespace' | 'excludeNamespaces' | 'ambientEnabled'>,
  args: K8sArgs,
): CaptureDecision | undefined {
  if (args.podName.startsWith(AGENT_POD_PREFIX) && args.podNamespace === cfg.podNamespace)
    return skip('node agent pod');
  if (args.podName === '' || args.podNamespace === '') return skip('not a Kubernetes pod');
  if (cfg.excludeNamespaces.includes(args.podNamespace)) return skip('excluded namespace');
  if (!cfg.ambientEnabled) return skip('ambient disabled');
  return undefined;
}

/** Host-network pods share the node's netns, which must never be redirected; then the enablement selectors decide. */
export function decideForPod(cfg: Pick<PluginConfig, 'enablementSelectors'>, pod: PodFacts): CaptureDecision {
  if (pod.hostNetwork) return skip('host network');
  if (Object.hasOwn(pod.annotations, SIDECAR_STATUS_ANNOTATION)) return skip('has a sidecar');
  return cfg.enablementSelectors.selects(pod.labels, pod.namespaceLabels) ? { capture: true } : skip('not selected');
}
