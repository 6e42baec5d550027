/**
 * What a pod object says about its place in the mesh, as Istio's node agent reads it (istio cni/pkg/util/podutil.go,
 * cni/pkg/nodeagent/net.go getPodLevelTrafficOverrides, pkg/kube/util.go CheckPodTerminal): whether the agent has
 * enrolled it (the `ambient.istio.io/redirection` annotation it writes), its IPs, whether it has terminated, whether
 * it is a ztunnel, and the per-pod annotations that change its in-pod rules.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { parseGoBool } from '../../lib/go-bool.js';
import type { WorkloadInfo } from '../../zds/workload-info.js';

export const REDIRECTION_ANNOTATION = 'ambient.istio.io/redirection';
/** Rules in place and ztunnel has the pod: istiod serves its workload as HBONE. */
export const REDIRECTION_ENABLED = 'enabled';
/** Rules in place but ztunnel has not taken the pod yet: it must be retried, or undone on removal. */
export const REDIRECTION_PENDING = 'pending';
export const DNS_CAPTURE_ANNOTATION = 'ambient.istio.io/dns-capture';
export const BYPASS_INBOUND_CAPTURE_ANNOTATION = 'ambient.istio.io/bypass-inbound-capture';
export const REROUTE_VIRTUAL_INTERFACES_ANNOTATION = 'istio.io/reroute-virtual-interfaces';

const annotation = (pod: V1Pod | undefined, name: string): string | undefined => pod?.metadata?.annotations?.[name];

export const podFullyEnrolled = (pod: V1Pod | undefined): boolean => annotation(pod, REDIRECTION_ANNOTATION) === REDIRECTION_ENABLED;
export const podPartiallyEnrolled = (pod: V1Pod | undefined): boolean => annotation(pod, REDIRECTION_ANNOTATION) === REDIRECTION_PENDING;

/** Succeeded or Failed: its containers are gone for good, though the object stays. */
export const isPodTerminal = (pod: V1Pod): boolean => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

/** ztunnel's own pods are never enrolled (Istio util.IsZtunnelPod). */
export const isZtunnelPod = (systemNamespace: string, pod: V1Pod): boolean => pod.metadata?.namespace === systemNamespace && pod.metadata.labels?.['app'] === 'ztunnel';

/** `status.podIPs`, else `status.podIP`, else none (early in a pod's life the API has none yet). */
export function podIps(pod: V1Pod): string[] {
  const ips = (pod.status?.podIPs ?? []).map((p) => p.ip).filter((ip) => ip !== '');
  if (ips.length > 0) return ips;
  const ip = pod.status?.podIP;
  return ip === undefined || ip === '' ? [] : [ip];
}

export function workloadInfo(pod: V1Pod): WorkloadInfo {
  return { name: pod.metadata?.name ?? '', namespace: pod.metadata?.namespace ?? '', serviceAccount: pod.spec?.serviceAccountName ?? 'default' };
}

/** Istio's pod-level overrides of the agent's rules (config.PodLevelOverrides). */
export interface PodTrafficOverrides {
  /** `bypass-inbound-capture: "true"`: no inbound redirect (an ingress gateway's pod). */
  readonly ingressMode: boolean;
  /** `dns-capture`: true or false per pod, undefined for the agent's AMBIENT_DNS_CAPTURE. */
  readonly dnsCapture: boolean | undefined;
  /** `reroute-virtual-interfaces`: interfaces whose inbound TCP goes to the outbound port. */
  readonly virtualInterfaces: readonly string[];
}

/** Anything but Go's boolean spellings counts as absent, as Istio's CheckBooleanAnnotation warns and ignores it. */
function boolAnnotation(pod: V1Pod, name: string): boolean | undefined {
  const v = annotation(pod, name);
  return v === undefined ? undefined : parseGoBool(v);
}

export function podTrafficOverrides(pod: V1Pod): PodTrafficOverrides {
  const virt = annotation(pod, REROUTE_VIRTUAL_INTERFACES_ANNOTATION);
  return {
    ingressMode: boolAnnotation(pod, BYPASS_INBOUND_CAPTURE_ANNOTATION) === true,
    dnsCapture: boolAnnotation(pod, DNS_CAPTURE_ANNOTATION),
    virtualInterfaces: virt === undefined ? [] : virt.split(',').map((s) => s.trim()).filter((s) => s !== ''),
  };
}
