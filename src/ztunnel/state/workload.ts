import { DEFAULT_SERVICE_ACCOUNT, DEFAULT_TRUST_DOMAIN, type Identity } from '../../lib/spiffe.js';

/** `Workload.tunnel_protocol` as ztunnel names it in `/config_dump` (HBONE or plain TCP). */
export type InboundProtocol = 'HBONE' | 'TCP';
export type HealthStatus = 'Healthy' | 'Unhealthy';

export interface Locality {
  readonly region: string;
  readonly zone: string;
  readonly subzone: string;
}

/** `GatewayAddress`: a waypoint or network gateway, by `network/ip` address or by namespaced hostname. */
export type GatewayAddress =
  | { readonly destination: { readonly address: string }; readonly hboneMtlsPort: number }
  | { readonly destination: { readonly namespace: string; readonly hostname: string }; readonly hboneMtlsPort: number };

/**
 * A workload as ztunnel holds it (ztunnel `proto/workload.proto`), with the field names of its `/config_dump`. Defaults are
 * filled in at conversion time: trust domain `cluster.local`, service account `default`, cluster
 * `Kubernetes`, capacity 1.
 */
export interface Workload {
  readonly uid: string;
  readonly workloadIps: readonly string[];
  readonly waypoint?: GatewayAddress | undefined;
  readonly networkGateway?: GatewayAddress | undefined;
  readonly protocol: InboundProtocol;
  readonly networkMode: 'Standard' | 'HostNetwork';
  readonly name: string;
  readonly namespace: string;
  readonly trustDomain: string;
  readonly serviceAccount: string;
  readonly network: string;
  readonly workloadName: string;
  readonly workloadType: string;
  readonly canonicalName: string;
  readonly canonicalRevision: string;
  readonly hostname: string;
  readonly node: string;
  readonly nativeTunnel: boolean;
  readonly applicationTunnel?: { readonly protocol: 'NONE' | 'PROXY'; readonly port?: number | undefined } | undefined;
  readonly authorizationPolicies: readonly string[];
  readonly status: HealthStatus;
  readonly clusterId: string;
  readonly locality?: Locality | undefined;
  /** `namespace/hostname` of the services this workload backs. */
  readonly services: readonly string[];
  readonly capacity: number;
}

export const DEFAULT_CLUSTER_ID = 'Kubernetes';

export function workloadIdentity(w: Workload): Identity {
  return {
    trustDomain: w.trustDomain === '' ? DEFAULT_TRUST_DOMAIN : w.trustDomain,
    namespace: w.namespace,
    serviceAccount: w.serviceAccount === '' ? DEFAULT_SERVICE_ACCOUNT : w.serviceAccount,
  };
}
