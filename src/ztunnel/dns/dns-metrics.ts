import { Counter, Histogram, type MetricsRegistry } from '../admin/prom-client-core.js';
import type { DnsClient } from './dns-store.js';

const LABELS = [
  'request_query_type',
  'request_protocol',
  'source_canonical_service',
  'source_canonical_revision',
] as const;
type DnsLabel = (typeof LABELS)[number];

/** ztunnel's buckets for the upstream duration, in seconds. */
const UPSTREAM_BUCKETS = [0.0005, 0.001, 0.01, 0.1, 1, 5];

export type DnsProtocol = 'udp' | 'tcp';

/** The labels of one request: its record type (lowercase), transport and the asking workload ("unknown" if none). */
export function dnsLabels(
  type: string,
  protocol: DnsProtocol,
  client: DnsClient | undefined,
): Record<DnsLabel, string> {
  return {
    request_query_type: type.toLowerCase(),
    request_protocol: protocol,
    source_canonical_service: client?.canonicalName || 'unknown',
    source_canonical_revision: client?.canonicalRevision || 'unknown',
  };
}

/**
 * ztunnel's DNS metrics (ztunnel `src/dns/metrics.rs`, under its `istio_` prefix), one set per ztunnel shared by the
 * proxies of all its pods: every request, those forwarded upstream, the forwards that failed, and how long
 * upstream took.
 */
export class DnsMetrics {
  readonly requests: Counter<DnsLabel>;
  readonly upstreamRequests: Counter<DnsLabel>;
  readonly upstreamFailures: Counter<DnsLabel>;
  readonly upstreamDuration: Histogram<DnsLabel>;

  constructor(registry: MetricsRegistry) {
    const registers = [registry];
    const labelNames = LABELS;
    this.requests = new Counter({
      name: 'istio_dns_requests_total',
      help: 'Total number of DNS requests (unstable)',
      labelNames,
      registers,
    });
    this.upstreamRequests = new Counter({
      name: 'istio_dns_upstream_requests_total',
      help: 'Total number of DNS requests forwarded to upstream (unstable)',
      labelNames,
      registers,
    });
    this.upstreamFailures = new Counter({
      name: 'istio_dns_upstream_failures_total',
      help: 'Total number of DNS requests that failed to forward upstream (unstable)',
      labelNames,
      registers,
    });
    this.upstreamDuration = new Histogram({
      name: 'istio_dns_upstream_request_duration_seconds',
      help: 'Total time in seconds Istio takes to get DNS response from upstream (unstable)',
      labelNames,
      buckets: UPSTREAM_BUCKETS,
      registers,
    });
  }
}
