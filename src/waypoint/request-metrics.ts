import { Counter, Histogram, type MetricsRegistry } from '../ztunnel/admin/prom-client-core.js';
import { LOCALITY_LABELS, TRAFFIC_LABELS, trafficLabels, type TrafficParties } from '../ztunnel/admin/metrics.js';

const REQUEST_LABELS = [...TRAFFIC_LABELS, ...LOCALITY_LABELS, 'response_code', 'grpc_response_status'] as const;
type RequestLabel = (typeof REQUEST_LABELS)[number];
/**
 * Envoy's response flags the waypoint reports: none, upstream connection failure, no healthy upstream, no route,
 * upstream timeout, denied by ext_authz.
 */
export type ResponseFlag = '-' | 'UF' | 'UH' | 'NR' | 'UT' | 'UAEX' | 'FI' | 'DI';
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
  private readonly requests: Counter<RequestLabel>;
  private readonly duration: Histogram<RequestLabel>;
  private readonly requestBytes: Histogram<RequestLabel>;
  private readonly responseBytes: Histogram<RequestLabel>;
  /**
   * Each label set's series of the four metrics, by its values: prom-client checks and hashes the labels on every
   * call otherwise, some 7% of the waypoint's CPU per request. Series are never removed, so a child stays
   * the series it was made for.
   */
  private readonly series = new Map<
    string,
    {
      readonly requests: ReturnType<Counter<RequestLabel>['labels']>;
      readonly duration: ReturnType<Histogram<RequestLabel>['labels']>;
      readonly requestBytes: ReturnType<Histogram<RequestLabel>['labels']>;
      readonly responseBytes: ReturnType<Histogram<RequestLabel>['labels']>;
    }
  >();

  constructor(registry: MetricsRegistry) {
    const registers = [registry];
    const labelNames = [...REQUEST_LABELS];
    this.requests = new Counter({
      name: 'istio_requests_total',
      help: 'Total requests handled by an Istio proxy',
      labelNames,
      registers,
    });
    this.duration = new Histogram({
      name: 'istio_request_duration_milliseconds',
      help: 'Total time taken by an Istio proxy to handle a request',
      labelNames,
      buckets: DURATION_BUCKETS_MS,
      registers,
    });
    const size = (name: string, help: string): Histogram<RequestLabel> =>
      new Histogram({ name, help, labelNames, buckets: SIZE_BUCKETS, registers });
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
        requests: this.requests.labels(labels),
        duration: this.duration.labels(labels),
        requestBytes: this.requestBytes.labels(labels),
        responseBytes: this.responseBytes.labels(labels),
      };
      this.series.set(key, s);
    }
    s.requests.inc();
    s.duration.observe(ms);
    s.requestBytes.observe(sizes.request);
    s.responseBytes.observe(sizes.response);
  }
}
