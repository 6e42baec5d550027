/**
 * What a pod object says about its place in the mesh, as Istio's node agent reads it (istio cni/pkg/util/podutil.go,
 * pkg/kube/util.go CheckPodTerminal): whether the agent has enrolled it (the `ambient.istio.io/redirection`
 * annotation it writes), its IPs, whether it has terminated, whether it is a ztunnel, and what ZDS says about it.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { WorkloadInfo } from '../../zds/workload-info.js';

export const REDIRECTION_ANNOTATION = 'ambient.istio.io/redirection';
/** Rules in place and ztunnel has the pod: istiod serves its workload as HBONE. */
export const REDIRECTION_ENABLED = 'enabled';
/** Rules in place but ztunnel has not taken the pod yet: it must be retried, or undone on removal. */
export const REDIRECTION_PENDING = 'pending';

const annotation = (pod: V1Pod | undefined, name: string): string | undefined => pod?.metadata?.annotations?.[name];

export const podFullyEnrolled = (pod: V1Pod | undefined): boolean =>
  annotation(pod, REDIRECTION_ANNOTATION) === REDIRECTION_ENABLED;
export const podPartiallyEnrolled = (pod: V1Pod | undefined): boolean =>
  annotation(pod, REDIRECTION_ANNOTATION) === REDIRECTION_PENDING;

/** Succeeded or Failed: its containers are gone for good, though the object stays. */
export const isPodTerminal = (pod: V1Pod): boolean =>
  pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

/** ztunnel's own pods are never enrolled (Istio util.IsZtunnelPod). */
export const isZtunnelPod = (systemNamespace: string, pod: V1Pod): boolean =>
  pod.metadata?.namespace === systemNamespace && pod.metadata.labels?.['app'] === 'ztunnel';

/** `status.podIPs`, else `status.podIP`, else none (early in a pod's life the API has none yet). */
export function podIps(pod: V1Pod): string[] {
  const ips = (pod.status?.podIPs ?? []).map((p) => p.ip).filter((ip) => ip !== '');
  if (ips.length > 0) return ips;
  const ip = pod.status?.podIP;
  return ip === undefined || ip === '' ? [] : [ip];
}

export function workloadInfo(pod: V1Pod): WorkloadInfo {
  return {
    name: pod.metadata?.name ?? '',
    namespace: pod.metadata?.namespace ?? '',
    serviceAccount: pod.spec?.serviceAccountName ?? 'default',
  };
}
