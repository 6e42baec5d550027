import type { Workload } from '../state/workload.js';

/**
 * The `baggage` header ztunnel sends (ztunnel `src/proxy/outbound.rs`): cluster, namespace, workload (keyed by lowercased type),
 * canonical service and revision, region and zone; empty values are left out; no spaces.
 */
export function baggageFor(w: Workload): string {
  const items: [string, string][] = [
    ['k8s.cluster.name', w.clusterId],
    ['k8s.namespace.name', w.namespace],
    [`k8s.${(w.workloadType || 'pod').toLowerCase()}.name`, w.workloadName || w.name],
    ['service.name', w.canonicalName],
    ['service.version', w.canonicalRevision],
    ['cloud.region', w.locality?.region ?? ''],
    ['cloud.availability_zone', w.locality?.zone ?? ''],
  ];
  return items
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}
