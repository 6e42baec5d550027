import type { Workload } from '../state/workload.js';

/**
 * The `baggage` header of HBONE (ztunnel `src/baggage.rs`): what a ztunnel says of the workload at its end, sent on
 * every CONNECT and, with ENABLE_RESPONSE_BAGGAGE, on the 200 that answers it; the other end reads it to name a
 * peer its own state does not know (ztunnel `src/proxy/inbound.rs`, its `DerivedWorkload`).
 */
export interface Baggage {
  readonly clusterId: string | undefined;
  readonly namespace: string | undefined;
  readonly workloadName: string | undefined;
  readonly serviceName: string | undefined;
  readonly revision: string | undefined;
  readonly region: string | undefined;
  readonly zone: string | undefined;
}

/**
 * The header for `w`: cluster, namespace, workload (keyed by lowercased type), canonical service and revision,
 * region and zone; empty values are left out; no spaces.
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

/** Which field each baggage key fills; the workload name comes under any of the workload types ztunnel knows. */
const KEYS: ReadonlyMap<string, keyof Baggage> = new Map([
  ['k8s.cluster.name', 'clusterId'],
  ['k8s.namespace.name', 'namespace'],
  ['k8s.deployment.name', 'workloadName'],
  ['k8s.cronjob.name', 'workloadName'],
  ['k8s.pod.name', 'workloadName'],
  ['k8s.job.name', 'workloadName'],
  ['service.name', 'serviceName'],
  ['service.version', 'revision'],
  ['cloud.region', 'region'],
  ['cloud.availability_zone', 'zone'],
]);

/** Baggage that names nothing: what a CONNECT without the header carries. */
export const NO_BAGGAGE: Baggage = {
  clusterId: undefined,
  namespace: undefined,
  workloadName: undefined,
  serviceName: undefined,
  revision: undefined,
  region: undefined,
  zone: undefined,
};

/**
 * Reads every `baggage` header value as ztunnel's `parse_baggage_header` does: `key=value` items split on `,` and
 * `=` with nothing trimmed, unknown keys and items without `=` skipped, an empty value clearing its field, a later
 * item over an earlier one.
 */
export function parseBaggage(values: readonly string[]): Baggage {
  const out: { -readonly [K in keyof Baggage]: Baggage[K] } = { ...NO_BAGGAGE };
  for (const value of values) {
    for (const item of value.split(',')) {
      const [key, val] = item.split('=');
      const field = KEYS.get(key!);
      if (val === undefined || field === undefined) continue;
      out[field] = val === '' ? undefined : val;
    }
  }
  return out;
}
