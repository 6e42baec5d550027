/**
 * The `app_protocol` istiod gives a Service port (ztunnel `proto/workload.proto` `AppProtocol`), as Istio derives it
 * (istio `pkg/config/kube/conversion.go` `ConvertProtocol`, `pkg/config/protocol/instance.go` `Parse`,
 * `pilot/pkg/serviceregistry/ambient/workloads.go` `toAppProtocolFromProtocol`): UDP is not an app protocol; else
 * `appProtocol` (with Kubernetes' `kubernetes.io/h2c`, `ws` and `wss`), else the port name, up to its first `-`; a
 * name Istio does not know is TCP on the well-known ports of SMTP, DNS, MySQL and MongoDB, and unknown elsewhere.
 */
export const AppProtocol = { UNKNOWN: 0, HTTP11: 1, HTTP2: 2, GRPC: 3, TCP: 4, TLS: 5 } as const;

const BY_NAME: Readonly<Record<string, number>> = {
  http: AppProtocol.HTTP11,
  http2: AppProtocol.HTTP2,
  grpc: AppProtocol.GRPC,
  https: AppProtocol.TLS,
  tls: AppProtocol.TLS,
  tcp: AppProtocol.TCP,
};
/** Names Istio knows that are no app protocol of the workload API (UNKNOWN, but not "unsupported"). */
const KNOWN_OTHERS = new Set(['udp', 'grpc-web', 'http_proxy', 'mongo', 'redis', 'mysql']);
const WELL_KNOWN_PORTS = new Set([25, 53, 3306, 27017]);

/** A protocol name as Istio parses it (`protocol.Parse`), as the workload API's app protocol. */
export function appProtocolOfName(name: string): number {
  return BY_NAME[name.toLowerCase()] ?? AppProtocol.UNKNOWN;
}

/** A Kubernetes Service port's app protocol. */
export function appProtocolOfServicePort(p: {
  readonly port: number;
  readonly name?: string | null | undefined;
  readonly protocol?: string | null | undefined;
  readonly appProtocol?: string | null | undefined;
}): number {
  if (p.protocol === 'UDP') return AppProtocol.UNKNOWN;
  let name = p.name ?? '';
  if (typeof p.appProtocol === 'string') {
    if (p.appProtocol === 'kubernetes.io/h2c') return AppProtocol.HTTP2;
    if (p.appProtocol === 'kubernetes.io/ws') return AppProtocol.HTTP11;
    if (p.appProtocol === 'kubernetes.io/wss') return AppProtocol.TLS;
    name = p.appProtocol;
  }
  if (name.toLowerCase().startsWith('grpc-web')) return AppProtocol.UNKNOWN;
  const prefix = name.split('-')[0]!.toLowerCase();
  if (BY_NAME[prefix] !== undefined) return BY_NAME[prefix];
  if (!KNOWN_OTHERS.has(prefix) && WELL_KNOWN_PORTS.has(p.port)) return AppProtocol.TCP;
  return AppProtocol.UNKNOWN;
}
