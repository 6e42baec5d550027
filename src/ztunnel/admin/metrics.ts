import { Counter, Gauge, MetricsRegistry, registerProcessFdMetrics } from './prom-client-core.js';
import { identityToString, type Identity } from '../../lib/spiffe.js';
import type { Service } from '../state/service.js';
import { workloadIdentity, type Workload } from '../state/workload.js';
import type { Baggage } from '../proxy/baggage.js';

/** Istio's traffic labels (ztunnel `src/proxy/metrics.rs` `CommonTrafficLabels`), every one defaulting to "unknown". */
export const TRAFFIC_LABELS = [
  'reporter',
  'source_workload',
  'source_canonical_service',
  'source_canonical_revision',
  'source_workload_namespace',
  'source_principal',
  'source_app',
  'source_version',
  'source_cluster',
  'destination_service',
  'destination_service_namespace',
  'destination_service_name',
  'destination_workload',
  'destination_canonical_service',
  'destination_canonical_revision',
  'destination_workload_namespace',
  'destination_principal',
  'destination_app',
  'destination_version',
  'destination_cluster',
  'request_protocol',
  'response_flags',
  'connection_security_policy',
] as const;
/**
 * ztunnel's `LocalityLabels`: region and zone of the source and destination workloads, "unknown" where a known
 * workload has none. ztunnel leaves all four out (`OptionallyEncode`) when it knows neither party.
 */
export const LOCALITY_LABELS = ['source_region', 'source_zone', 'destination_region', 'destination_zone'] as const;
type LabelName = (typeof TRAFFIC_LABELS)[number] | (typeof LOCALITY_LABELS)[number];
export type TrafficLabels = Record<(typeof TRAFFIC_LABELS)[number], string> &
  Partial<Record<(typeof LOCALITY_LABELS)[number], string>>;

export type ResponseFlags =
  '-' | 'DENY' | 'CONNECT' | 'TLS_FAILURE' | 'H2_HANDSHAKE_FAILURE' | 'NETWORK_POLICY' | 'IDENTITY_ERROR';

const UNKNOWN = 'unknown';
const or = (s: string | undefined): string => (s === undefined || s === '' ? UNKNOWN : s);

export interface TrafficParties {
  /** Who reports: the client's ztunnel, the server's, or a waypoint between them (Istio's `reporter` label). */
  readonly reporter: 'source' | 'destination' | 'waypoint';
  readonly source: Workload | undefined;
  readonly sourceIdentity: Identity | undefined;
  /**
   * What an inbound CONNECT's `baggage` said of its source (ztunnel's `derived_source`), which names the source
   * when the state does not know it; a known source wins over it.
   */
  readonly derivedSource?: Baggage | undefined;
  readonly destination: Workload | undefined;
  readonly destinationService: Service | undefined;
  readonly mtls: boolean;
  /**
   * The hop to the destination is mTLS although the client's is not (an ingress gateway's requests, sent on over
   * HBONE): the destination's principal is known, as Envoy's gateways report it. Unset: as `mtls`.
   */
  readonly upstreamMtls?: boolean;
}

export function trafficLabels(p: TrafficParties, flags: ResponseFlags): TrafficLabels {
  const s = p.source;
  const d = p.destination;
  const sid = p.sourceIdentity ?? (s === undefined ? undefined : workloadIdentity(s));
  // ztunnel fills them once it knows either party: the peer's mTLS identity counts as a (derived) source.
  const locality =
    s === undefined && d === undefined && p.sourceIdentity === undefined
      ? {}
      : {
          source_region: or(s === undefined ? p.derivedSource?.region : s.locality?.region),
          source_zone: or(s === undefined ? p.derivedSource?.zone : s.locality?.zone),
          destination_region: or(d?.locality?.region),
          destination_zone: or(d?.locality?.zone),
        };
  return {
    reporter: p.reporter,
    ...sourceLabels(s, p.derivedSource),
    source_principal: sid === undefined || (!p.mtls && p.reporter === 'destination') ? UNKNOWN : identityToString(sid),
    destination_service: or(p.destinationService?.hostname),
    destination_service_namespace: or(p.destinationService?.namespace),
    destination_service_name: or(p.destinationService?.name),
    destination_workload: or(d?.workloadName || d?.name),
    destination_canonical_service: or(d?.canonicalName),
    destination_canonical_revision: or(d?.canonicalRevision),
    destination_workload_namespace: or(d?.namespace),
    destination_principal:
      d === undefined || !(p.upstreamMtls ?? p.mtls) ? UNKNOWN : identityToString(workloadIdentity(d)),
    destination_app: or(d?.canonicalName),
    destination_version: or(d?.canonicalRevision),
    destination_cluster: or(d?.clusterId),
    request_protocol: 'tcp',
    response_flags: flags,
    connection_security_policy: p.mtls ? 'mutual_tls' : UNKNOWN,
    ...locality,
  };
}

type SourceLabel =
  | 'source_workload'
  | 'source_canonical_service'
  | 'source_canonical_revision'
  | 'source_workload_namespace'
  | 'source_app'
  | 'source_version'
  | 'source_cluster';

/**
 * The source's labels from the workload the state knows, else from the CONNECT's baggage as ztunnel's
 * `with_derived_source` maps it (its app label is the baggage's workload name), else "unknown".
 */
function sourceLabels(s: Workload | undefined, derived: Baggage | undefined): Record<SourceLabel, string> {
  if (s !== undefined || derived === undefined)
    return {
      source_workload: or(s?.workloadName || s?.name),
      source_canonical_service: or(s?.canonicalName),
      source_canonical_revision: or(s?.canonicalRevision),
      source_workload_namespace: or(s?.namespace),
      source_app: or(s?.canonicalName),
      source_version: or(s?.canonicalRevision),
      source_cluster: or(s?.clusterId),
    };
  return {
    source_workload: or(derived.workloadName),
    source_canonical_service: or(derived.serviceName),
    source_canonical_revision: or(derived.revision),
    source_workload_namespace: or(derived.namespace),
    source_app: or(derived.workloadName),
    source_version: or(derived.revision),
    source_cluster: or(derived.clusterId),
  };
}

/** Registers a ztunnel's process metrics in its registry. */
export type ProcessMetrics = (registry: MetricsRegistry) => void;

/**
 * ztunnel's process metrics (`process_open_fds`, `process_max_fds`), or with `nodeMetrics` (`--node-metrics`)
 * prom-client's default Node.js metrics, which include those two and add `nodejs_*` (heap, GC, event loop lag,
 * handles), `process_cpu_*`, `process_resident_memory_bytes` and the like. They are opt-in: ztunnel exports none of
 * them, and loading them costs an idle ztunnel ~2.3 MiB (docs/performance.md).
 */
export async function processMetrics(nodeMetrics: boolean): Promise<ProcessMetrics> {
  if (!nodeMetrics) return registerProcessFdMetrics;
  const { collectDefaultMetrics } = await import('prom-client');
  return (register) => {
    collectDefaultMetrics({ register });
  };
}

/** ztunnel's metrics in one private registry (ztunnel `src/proxy/metrics.rs`, `src/metrics/process.rs`). */
export class ZtunnelMetrics {
  readonly registry = new MetricsRegistry();
  readonly opened: Counter<LabelName>;
  readonly closed: Counter<LabelName>;
  readonly sent: Counter<LabelName>;
  readonly received: Counter<LabelName>;
  readonly failed: Counter<LabelName>;
  readonly socketsOpen: Gauge<'reporter'>;

  constructor(version: string, registerProcessMetrics: ProcessMetrics = registerProcessFdMetrics) {
    const registers = [this.registry];
    const labelNames = [...TRAFFIC_LABELS, ...LOCALITY_LABELS];
    const c = (name: string, help: string): Counter<LabelName> => new Counter({ name, help, labelNames, registers });
    this.opened = c('istio_tcp_connections_opened_total', 'The total number of TCP connections opened');
    this.closed = c('istio_tcp_connections_closed_total', 'The total number of TCP connections closed');
    this.sent = c(
      'istio_tcp_sent_bytes_total',
      'The size of total bytes sent during response in case of a TCP connection',
    );
    this.received = c(
      'istio_tcp_received_bytes_total',
      'The size of total bytes received during request in case of a TCP connection',
    );
    this.failed = c(
      'istio_tcp_connections_failed_total',
      'The total number of TCP connections that failed to establish',
    );
    this.socketsOpen = new Gauge({
      name: 'istio_tcp_sockets_open',
      help: 'The current number of open sockets',
      labelNames: ['reporter'],
      registers,
    });
    new Gauge({
      name: 'istio_build',
      help: 'Istio component build info',
      labelNames: ['component', 'tag'],
      registers,
    }).set({ component: 'ztunnel', tag: version }, 1);
    registerProcessMetrics(this.registry);
  }
}
