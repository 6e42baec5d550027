/**
 * istiod's model of what it serves ztunnel (ztunnel `proto/workload.proto`): plain data with the field names and enum numbers of
 * the WDS protos, so `xds/convert.ts` maps it onto generated messages one to one. Nothing here imports generated
 * code.
 */

export const TunnelProtocol = { NONE: 0, HBONE: 1 } as const;
export const WorkloadStatus = { HEALTHY: 0, UNHEALTHY: 1 } as const;
export const NetworkMode = { STANDARD: 0, HOST_NETWORK: 1 } as const;
export const WorkloadType = { DEPLOYMENT: 0, CRONJOB: 1, POD: 2, JOB: 3 } as const;
export const LbScope = { REGION: 1, ZONE: 2, SUBZONE: 3, NODE: 4, CLUSTER: 5, NETWORK: 6 } as const;
export const LbMode = { UNSPECIFIED_MODE: 0, STRICT: 1, FAILOVER: 2, PASSTHROUGH: 3 } as const;
export const LbHealthPolicy = { ONLY_HEALTHY: 0, ALLOW_ALL: 1 } as const;
export const AuthzScope = { GLOBAL: 0, NAMESPACE: 1, WORKLOAD_SELECTOR: 2 } as const;
export const AuthzAction = { ALLOW: 0, DENY: 1 } as const;

export interface PortModel {
  readonly servicePort: number;
  /** 0: a named port, resolved per endpoint. */
  readonly targetPort: number;
  /** A Service's port: its `AppProtocol` (app-protocol.ts); unset on a workload's ports. */
  readonly appProtocol?: number;
}

/** `istio.workload.Locality`. */
export interface LocalityModel {
  readonly region: string;
  readonly zone: string;
  readonly subzone: string;
}

/** `istio.workload.GatewayAddress`: a waypoint by namespaced hostname (what istiod prefers) or by address. */
export type GatewayAddressModel =
  | {
      readonly hostname: { readonly namespace: string; readonly hostname: string };
      readonly hboneMtlsPort: number;
    }
  | { readonly address: NetworkAddressModel; readonly hboneMtlsPort: number };

export interface WorkloadModel {
  readonly uid: string;
  readonly name: string;
  readonly namespace: string;
  /** Raw 4- or 16-byte addresses. */
  readonly addresses: readonly Uint8Array[];
  /** For workloads known by DNS name only (ServiceEntry endpoints, WorkloadEntries). */
  readonly hostname: string;
  readonly network: string;
  readonly tunnelProtocol: number;
  readonly nativeTunnel: boolean;
  /** Load-balancing weight; undefined means 1. */
  readonly capacity: number | undefined;
  /** Empty when it is the default `cluster.local` (istiod `pickTrustDomain`). */
  readonly trustDomain: string;
  readonly serviceAccount: string;
  readonly node: string;
  readonly canonicalName: string;
  readonly canonicalRevision: string;
  readonly workloadType: number;
  readonly workloadName: string;
  /** `namespace/hostname` → ports. */
  readonly services: Readonly<Record<string, readonly PortModel[]>>;
  readonly authorizationPolicies: readonly string[];
  readonly status: number;
  readonly clusterId: string;
  readonly networkMode: number;
  /** Unset when nothing about it is known. */
  readonly locality: LocalityModel | undefined;
  /** The waypoint its workload-addressed traffic goes through, if it is bound to one. */
  readonly waypoint?: GatewayAddressModel | undefined;
}

export interface NetworkAddressModel {
  readonly network: string;
  readonly address: Uint8Array;
  /** Set for CIDR VIPs. */
  readonly length?: number;
}

export interface ServiceModel {
  readonly name: string;
  readonly namespace: string;
  readonly hostname: string;
  readonly addresses: readonly NetworkAddressModel[];
  readonly ports: readonly PortModel[];
  readonly subjectAltNames: readonly string[];
  readonly loadBalancing:
    { readonly routingPreference: readonly number[]; readonly mode: number; readonly healthPolicy: number } | undefined;
  readonly canonical: boolean;
  /** The waypoint its traffic goes through, if it is bound to one. */
  readonly waypoint?: GatewayAddressModel | undefined;
}

export type StringMatchModel =
  { readonly exact: string } | { readonly prefix: string } | { readonly suffix: string } | { readonly presence: true };

export interface IpMatchModel {
  readonly address: Uint8Array;
  readonly length: number;
}

export interface MatchModel {
  readonly namespaces: readonly StringMatchModel[];
  readonly notNamespaces: readonly StringMatchModel[];
  readonly serviceAccounts: readonly { readonly namespace: string; readonly serviceAccount: string }[];
  readonly notServiceAccounts: readonly { readonly namespace: string; readonly serviceAccount: string }[];
  readonly principals: readonly StringMatchModel[];
  readonly notPrincipals: readonly StringMatchModel[];
  readonly sourceIps: readonly IpMatchModel[];
  readonly notSourceIps: readonly IpMatchModel[];
  readonly destinationIps: readonly IpMatchModel[];
  readonly notDestinationIps: readonly IpMatchModel[];
  readonly destinationPorts: readonly number[];
  readonly notDestinationPorts: readonly number[];
}

/** rules → clauses → matches; named as on the wire (Istio's Go code calls them groups → rules). */
export interface AuthorizationModel {
  readonly name: string;
  readonly namespace: string;
  readonly scope: number;
  readonly action: number;
  readonly rules: readonly { readonly clauses: readonly { readonly matches: readonly MatchModel[] }[] }[];
  readonly dryRun: boolean;
}

export function emptyMatch(): MatchModel {
  return {
    namespaces: [],
    notNamespaces: [],
    serviceAccounts: [],
    notServiceAccounts: [],
    principals: [],
    notPrincipals: [],
    sourceIps: [],
    notSourceIps: [],
    destinationIps: [],
    notDestinationIps: [],
    destinationPorts: [],
    notDestinationPorts: [],
  };
}
