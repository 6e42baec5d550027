/**
 * The request metrics CoreDNS's prometheus plugin exports (`prometheus :9153` in kubeadm's Corefile; coredns
 * plugin/metrics/vars `vars.go`, `report.go`, `monitor.go`), for the one server block `.:53`:
 * `coredns_dns_requests_total`, `coredns_dns_responses_total` and `coredns_dns_request_duration_seconds`.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { DnsProtocol } from '../ztunnel/dns/dns-metrics.js';

/** The query types counted by name (`monitor.go` `monitorType`); any other is `other`. */
const MONITORED_TYPES: ReadonlySet<string> = new Set([
  'A',
  'AAAA',
  'NS',
  'PTR',
  'SOA',
  'CNAME',
  'MX',
  'TXT',
  'SRV',
  'NAPTR',
  'DS',
  'DNSKEY',
  'RRSIG',
  'NSEC',
  'NSEC3',
  'HINFO',
  'IXFR',
  'AXFR',
  'ANY',
  'HTTPS',
  'SVCB',
]);
/** Types dns-packet knows by number only. */
const NUMBERED_TYPES: Readonly<Record<string, string>> = { UNKNOWN_64: 'SVCB', UNKNOWN_65: 'HTTPS' };
const RCODE_NAMES = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED'];
/** `plugin.TimeBuckets`: 0.25 ms doubling 16 times. */
const TIME_BUCKETS = Array.from({ length: 16 }, (_, i) => 0.00025 * 2 ** i);

/** Who wrote a response, the `plugin` label. */
export type ResponsePlugin = 'kubernetes' | 'forward' | 'cache';

export class ClusterDnsMetrics {
  private readonly requests: Counter<'server' | 'zone' | 'view' | 'proto' | 'family' | 'type'>;
  private readonly responses: Counter<'server' | 'zone' | 'view' | 'rcode' | 'plugin'>;
  private readonly duration: Histogram<'server' | 'zone' | 'view'>;

  /** `server` is the block's address as CoreDNS names it (`dns://:53`); `family` is 1 (IPv4) or 2 (IPv6). */
  constructor(
    registry: Registry,
    private readonly server: string,
    private readonly family: '1' | '2',
  ) {
    this.requests = new Counter({
      name: 'coredns_dns_requests_total',
      help: 'Counter of DNS requests made per zone, protocol and family.',
      labelNames: ['server', 'zone', 'view', 'proto', 'family', 'type'],
      registers: [registry],
    });
    this.responses = new Counter({
      name: 'coredns_dns_responses_total',
      help: 'Counter of response status codes.',
      labelNames: ['server', 'zone', 'view', 'rcode', 'plugin'],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'coredns_dns_request_duration_seconds',
      help: 'Histogram of the time (in seconds) each request took per zone.',
      labelNames: ['server', 'zone', 'view'],
      buckets: TIME_BUCKETS,
      registers: [registry],
    });
  }

  /** One query answered: its type and transport, the response code, who answered it and how long it took. */
  record(type: string, protocol: DnsProtocol, rcode: number, plugin: ResponsePlugin, seconds: number): void {
    const block = { server: this.server, zone: '.', view: '' };
    this.requests.inc({
      ...block,
      proto: protocol,
      family: this.family,
      type: MONITORED_TYPES.has(NUMBERED_TYPES[type] ?? type) ? (NUMBERED_TYPES[type] ?? type) : 'other',
    });
    this.responses.inc({ ...block, rcode: RCODE_NAMES[rcode] ?? String(rcode), plugin });
    this.duration.observe(block, seconds);
  }
}
