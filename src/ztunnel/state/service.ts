import type { GatewayAddress, HealthStatus } from './workload.js';

export type LoadBalancerMode = 'Standard' | 'Strict' | 'Failover' | 'Passthrough';
export type LoadBalancerScope = 'Region' | 'Zone' | 'Subzone' | 'Node' | 'Cluster' | 'Network';

export interface LoadBalancer {
  readonly routingPreferences: readonly LoadBalancerScope[];
  readonly mode: LoadBalancerMode;
  readonly healthPolicy: 'OnlyHealthy' | 'AllowAll';
}

/** One backend of a service: a workload and its port map (service port → target port) for this service. */
export interface Endpoint {
  readonly workloadUid: string;
  readonly port: Readonly<Record<string, number>>;
  readonly status: HealthStatus;
}

/** A port's `app_protocol` (ztunnel `proto/workload.proto` `AppProtocol`), which a waypoint handles it by. */
export type AppProtocolName = 'HTTP11' | 'HTTP2' | 'GRPC' | 'TCP' | 'TLS';

/** A service as ztunnel holds it (ztunnel `proto/workload.proto`), keyed by `namespace/hostname`. */
export interface Service {
  readonly name: string;
  readonly namespace: string;
  readonly hostname: string;
  /** `network/ip` */
  readonly vips: readonly string[];
  readonly cidrVips?: readonly string[] | undefined;
  /** service port → target port (0: a named port, resolved per endpoint) */
  readonly ports: Readonly<Record<string, number>>;
  readonly endpoints: Readonly<Record<string, Endpoint>>;
  /** service port → its declared app protocol, for the ports that declare one (not in ztunnel's `/config_dump`). */
  readonly appProtocols?: Readonly<Record<string, AppProtocolName>> | undefined;
  readonly subjectAltNames: readonly string[];
  readonly waypoint?: GatewayAddress | undefined;
  readonly loadBalancer?: LoadBalancer | undefined;
  readonly ipFamilies?: 'Dual' | 'IPv4' | 'IPv6' | undefined;
  readonly canonical: boolean;
  readonly visibility: 'Public' | 'Namespace';
}

export function serviceKey(s: { namespace: string; hostname: string }): string {
  return `${s.namespace}/${s.hostname}`;
}
