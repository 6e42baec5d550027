import { Series, SeriesMetric } from '../lib/series-metric.js';
import type { MetricsRegistry } from '../ztunnel/admin/prom-client-core.js';
import { LOCALITY_LABELS, TRAFFIC_LABELS, trafficLabels, type TrafficParties } from '../ztunnel/admin/metrics.js';

const REQUEST_LABELS = [...TRAFFIC_LABELS, ...LOCALITY_LABELS, 'response_code', 'grpc_response_status'] as const;
type RequestLabel = (typeof REQUEST_LABELS)[number];
/**
 * Envoy's response flags the waypoint reports: none, upstream connection failure, no healthy upstream, no route,
 * upstream timeout, denied by ext_authz, fault abort and delay, upstream overflow (a circuit breaker).
 */
export type ResponseFlag = '-' | 'UF' | 'UH' | 'NR' | 'UT' | 'UAEX' | 'FI' | 'DI' | 'UO';
/** Istio's default buckets for request durations (milliseconds). */
const DURATION_BUCKETS_MS = [
  1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000, 3600000,
];

/** Request and response sizes in bytes, bucketed by decades. */
const SIZE_BUCKETS = [1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000];

/**
 * Istio's standard request metrics (istio.io, reference/config/metrics), as its proxies' stats filter exports them:
 * `istio_requests_total`, `istio_request_duration_milliseconds`, `istio_request_bytes` and `istio_response_bytes`
 * (headers and body), with the traffic labels of the TCP metrics and
 * `request_protocol="http"`, `response_code`, `grpc_response_status`, and Envoy's response flags.
 */
export class RequestMetrics {
  private readonly requests: SeriesMetric<RequestLabel>;
  private readonly duration: SeriesMetric<RequestLabel>;
  private readonly requestBytes: SeriesMetric<RequestLabel>;
  private readonly responseBytes: SeriesMetric<RequestLabel>;
  /** Each label set's series of the four metrics, by its values. Series are never removed. */
  private readonly series = new Map<
    string,
    {
      readonly requests: Series<RequestLabel>;
      readonly duration: Series<RequestLabel>;
      readonly requestBytes: Series<RequestLabel>;
      readonly responseBytes: Series<RequestLabel>;
    }
  >();

  constructor(registry: MetricsRegistry) {
    this.requests = SeriesMetric.counter(
      registry,
      'istio_requests_total',
      'Total requests handled by an Istio proxy',
      REQUEST_LABELS,
    );
    this.duration = SeriesMetric.histogram(
      registry,
      'istio_request_duration_milliseconds',
      'Total time taken by an Istio proxy to handle a request',
      REQUEST_LABELS,
      DURATION_BUCKETS_MS,
    );
    const size = (name: string, help: string): SeriesMetric<RequestLabel> =>
      SeriesMetric.histogram(registry, name, help, REQUEST_LABELS, SIZE_BUCKETS);
    this.requestBytes = size('istio_request_bytes', 'Request sizes (headers and body) handled by an Istio proxy');
    this.responseBytes = size('istio_response_bytes', 'Response sizes (headers and body) sent by an Istio proxy');
  }

  /** One request of `sizes.request` bytes answered with `status` (`sizes.response` bytes) after `ms`. */
  record(
    parties: TrafficParties,
    status: number,
    flags: ResponseFlag,
    ms: number,
    sizes: { readonly request: number; readonly response: number },
    /** Set for a gRPC request: its `grpc-status` (empty when the upstream gave none). */
    grpc?: { readonly status: string },
  ): void {
    const labels = {
      ...trafficLabels(parties, '-'),
      response_flags: flags,
      request_protocol: grpc === undefined ? 'http' : 'grpc',
      response_code: String(status),
      grpc_response_status: grpc?.status ?? '',
    };
    const key = Object.values(labels).join('\u0000');
    let s = this.series.get(key);
    if (s === undefined) {
      s = {
        requests: this.requests.series(labels),
        duration: this.duration.series(labels),
        requestBytes: this.requestBytes.series(labels),
        responseBytes: this.responseBytes.series(labels),
      };
      this.series.set(key, s);
    }
    s.requests.inc();
    s.duration.observe(ms);
    s.requestBytes.observe(sizes.request);
    s.responseBytes.observe(sizes.response);
  }
}
