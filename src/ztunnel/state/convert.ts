import { anyUnpack, type Any } from '@bufbuild/protobuf/wkt';
import {
  AddressSchema,
  IPFamilies,
  LoadBalancing_HealthPolicy,
  LoadBalancing_Mode,
  LoadBalancing_Scope,
  TunnelProtocol,
  WorkloadStatus,
  WorkloadType,
  type GatewayAddress as PbGateway,
  type Service as PbService,
  type Workload as PbWorkload,
} from '../../api/istio/workload/workload_pb.js';
import {
  Action,
  AuthorizationSchema,
  Scope,
  type Match,
  type StringMatch as PbStringMatch,
} from '../../api/istio/security/authorization_pb.js';
import { formatIp, parseCidr, type Cidr } from '../../lib/ip.js';
import type { LocalWorkload } from './local-config.js';
import {
  failClosedPolicy,
  type Authorization,
  type RbacAction,
  type RbacMatch,
  type RbacScope,
  type StringMatch,
} from './policy.js';
import type { AppProtocolName, LoadBalancerMode, LoadBalancerScope, Service } from './service.js';
import { DEFAULT_CLUSTER_ID, type GatewayAddress, type Workload } from './workload.js';

/** A resource ztunnel could not take: its name and why (sent back in the NACK). */
export interface Rejected {
  readonly rejected: string;
}

export type ConvertedAddress = { readonly workload: LocalWorkload } | { readonly service: Service } | Rejected;

function gateway(g: PbGateway | undefined): GatewayAddress | undefined {
  if (g === undefined) return undefined;
  const d = g.destination;
  if (d.case === 'hostname')
    return {
      destination: { namespace: d.value.namespace, hostname: d.value.hostname },
      hboneMtlsPort: g.hboneMtlsPort,
    };
  if (d.case === 'address')
    return {
      destination: { address: `${d.value.network}/${formatIp(d.value.address) ?? ''}` },
      hboneMtlsPort: g.hboneMtlsPort,
    };
  return undefined;
}

const SCOPES: Record<number, LoadBalancerScope> = {
  [LoadBalancing_Scope.REGION]: 'Region',
  [LoadBalancing_Scope.ZONE]: 'Zone',
  [LoadBalancing_Scope.SUBZONE]: 'Subzone',
  [LoadBalancing_Scope.NODE]: 'Node',
  [LoadBalancing_Scope.CLUSTER]: 'Cluster',
  [LoadBalancing_Scope.NETWORK]: 'Network',
};

/** Modes ztunnel names; an unspecified or unknown one is `Standard`. */
const MODES: Record<number, LoadBalancerMode> = {
  [LoadBalancing_Mode.STRICT]: 'Strict',
  [LoadBalancing_Mode.FAILOVER]: 'Failover',
  [LoadBalancing_Mode.PASSTHROUGH]: 'Passthrough',
};

/** `AUTOMATIC` (and an unknown value) leaves the families unset. */
const IP_FAMILIES: Record<number, NonNullable<Service['ipFamilies']>> = {
  [IPFamilies.IPV4_ONLY]: 'IPv4',
  [IPFamilies.IPV6_ONLY]: 'IPv6',
  [IPFamilies.DUAL]: 'Dual',
};

function workloadFromXds(w: PbWorkload): { workload: LocalWorkload } | Rejected {
  if (w.uid === '') return { rejected: 'workload has no uid' };
  if (w.tunnelProtocol === TunnelProtocol.LEGACY_ISTIO_MTLS)
    return { rejected: `workload ${w.uid}: unsupported tunnel protocol: legacy istio mtls` };
  const ips: string[] = [];
  for (const a of w.addresses) {
    const ip = formatIp(a);
    if (ip === undefined) return { rejected: `workload ${w.uid}: address of ${a.length} bytes is not IPv4 or IPv6` };
    ips.push(ip);
  }
  const services: Record<string, Record<string, number>> = {};
  for (const [k, pl] of Object.entries(w.services))
    services[k] = Object.fromEntries(pl.ports.map((p) => [String(p.servicePort), p.targetPort]));
  const workload: Workload = {
    uid: w.uid,
    workloadIps: ips,
    waypoint: gateway(w.waypoint),
    networkGateway: gateway(w.networkGateway),
    protocol: w.tunnelProtocol === TunnelProtocol.HBONE ? 'HBONE' : 'TCP',
    networkMode: w.networkMode === 1 ? 'HostNetwork' : 'Standard',
    name: w.name,
    namespace: w.namespace,
    trustDomain: w.trustDomain,
    serviceAccount: w.serviceAccount,
    network: w.network,
    workloadName: w.workloadName,
    workloadType: (WorkloadType[w.workloadType] ?? 'POD').toLowerCase(),
    canonicalName: w.canonicalName,
    canonicalRevision: w.canonicalRevision,
    hostname: w.hostname,
    node: w.node,
    nativeTunnel: w.nativeTunnel,
    applicationTunnel:
      w.applicationTunnel === undefined
        ? undefined
        : {
            protocol: w.applicationTunnel.protocol === 1 ? 'PROXY' : 'NONE',
            port: w.applicationTunnel.port === 0 ? undefined : w.applicationTunnel.port,
          },
    authorizationPolicies: [...w.authorizationPolicies],
    status: w.status === WorkloadStatus.UNHEALTHY ? 'Unhealthy' : 'Healthy',
    clusterId: w.clusterId === '' ? DEFAULT_CLUSTER_ID : w.clusterId,
    locality:
      w.locality === undefined
        ? undefined
        : { region: w.locality.region, zone: w.locality.zone, subzone: w.locality.subzone },
    services: Object.keys(services),
    capacity: w.capacity ?? 1,
  };
  return { workload: { workload, services } };
}

const APP_PROTOCOLS: Readonly<Record<number, AppProtocolName>> = {
  1: 'HTTP11',
  2: 'HTTP2',
  3: 'GRPC',
  4: 'TCP',
  5: 'TLS',
};

/** The ports that declare an app protocol; undefined when none does. */
function appProtocols(ports: PbService['ports']): Record<string, AppProtocolName> | undefined {
  const out = Object.fromEntries(
    ports.flatMap((p) => {
      const name = APP_PROTOCOLS[p.appProtocol];
      return name === undefined ? [] : [[String(p.servicePort), name] as const];
    }),
  );
  return Object.keys(out).length === 0 ? undefined : out;
}

function serviceFromXds(s: PbService): { service: Service } | Rejected {
  const vips: string[] = [];
  const cidrVips: string[] = [];
  for (const a of s.addresses) {
    const ip = formatIp(a.address);
    if (ip === undefined) return { rejected: `service ${s.namespace}/${s.hostname}: VIP of ${a.address.length} bytes` };
    if (a.length !== undefined && a.length !== a.address.length * 8) cidrVips.push(`${a.network}/${ip}/${a.length}`);
    else vips.push(`${a.network}/${ip}`);
  }
  const lb = s.loadBalancing;
  return {
    service: {
      name: s.name,
      namespace: s.namespace,
      hostname: s.hostname,
      vips,
      cidrVips,
      ports: Object.fromEntries(s.ports.map((p) => [String(p.servicePort), p.targetPort])),
      appProtocols: appProtocols(s.ports),
      endpoints: {},
      subjectAltNames: [...s.subjectAltNames],
      waypoint: gateway(s.waypoint),
      loadBalancer:
        lb === undefined
          ? undefined
          : {
              routingPreferences: lb.routingPreference.flatMap((x) => (SCOPES[x] === undefined ? [] : [SCOPES[x]])),
              mode: MODES[lb.mode] ?? 'Standard',
              healthPolicy: lb.healthPolicy === LoadBalancing_HealthPolicy.ALLOW_ALL ? 'AllowAll' : 'OnlyHealthy',
            },
      ipFamilies: IP_FAMILIES[s.ipFamilies],
      canonical: s.canonical,
      visibility: s.visibility === 1 ? 'Namespace' : 'Public',
    },
  };
}

/** An `istio.workload.Address` Any → a workload (with its service ports) or a service. Never throws. */
export function addressFromXds(name: string, any: Any | undefined): ConvertedAddress {
  let a;
  try {
    a = any === undefined ? undefined : anyUnpack(any, AddressSchema);
  } catch (e) {
    return { rejected: `${name}: cannot decode Address: ${(e as Error).message}` };
  }
  if (a === undefined) return { rejected: `${name}: not an istio.workload.Address` };
  if (a.type.case === 'workload') return workloadFromXds(a.type.value);
  if (a.type.case === 'service') return serviceFromXds(a.type.value);
  return { rejected: `${name}: Address has neither a workload nor a service` };
}

function stringMatch(m: PbStringMatch): StringMatch | undefined {
  switch (m.matchType.case) {
    case 'exact':
      return { Exact: m.matchType.value };
    case 'prefix':
      return { Prefix: m.matchType.value };
    case 'suffix':
      return { Suffix: m.matchType.value };
    case 'presence':
      return { Presence: [] };
    default:
      return undefined;
  }
}

function matchFromXds(m: Match): RbacMatch | string {
  const sm = (xs: PbStringMatch[]): StringMatch[] | string => {
    const out = xs.map(stringMatch);
    return out.some((x) => x === undefined) ? 'empty string match' : (out as StringMatch[]);
  };
  const cidr = (xs: { address: Uint8Array; length: number }[]): Cidr[] | string => {
    const out: Cidr[] = [];
    for (const x of xs) {
      const c = parseCidr(`${formatIp(x.address) ?? 'x'}/${x.length}`);
      if (c === undefined) return `invalid IP match of ${x.address.length} bytes /${x.length}`;
      out.push(c);
    }
    return out;
  };
  const fields = {
    namespaces: sm(m.namespaces),
    notNamespaces: sm(m.notNamespaces),
    principals: sm(m.principals),
    notPrincipals: sm(m.notPrincipals),
    sourceIps: cidr(m.sourceIps),
    notSourceIps: cidr(m.notSourceIps),
    destinationIps: cidr(m.destinationIps),
    notDestinationIps: cidr(m.notDestinationIps),
  };
  for (const v of Object.values(fields)) if (typeof v === 'string') return v;
  return {
    ...(fields as unknown as Pick<RbacMatch, keyof typeof fields>),
    serviceAccounts: m.serviceAccounts.map((s) => ({ namespace: s.namespace, serviceAccount: s.serviceAccount })),
    notServiceAccounts: m.notServiceAccounts.map((s) => ({ namespace: s.namespace, serviceAccount: s.serviceAccount })),
    destinationPorts: [...m.destinationPorts],
    notDestinationPorts: [...m.notDestinationPorts],
  };
}

const RBAC_SCOPES: Partial<Record<number, RbacScope>> = {
  [Scope.GLOBAL]: 'Global',
  [Scope.NAMESPACE]: 'Namespace',
  [Scope.WORKLOAD_SELECTOR]: 'WorkloadSelector',
};
const RBAC_ACTIONS: Partial<Record<number, RbacAction>> = { [Action.ALLOW]: 'Allow', [Action.DENY]: 'Deny' };

/**
 * An `istio.security.Authorization` Any → a policy. Never throws. As ztunnel (`src/rbac.rs`
 * `TryFrom<XdsRbac>`), an unknown `scope` or `action` enum value is rejected by name, never mapped to a default.
 * A rejected resource still yields a policy: the fail-closed stand-in (`failClosedPolicy`) that denies whatever the
 * policy could cover, held until istiod sends a version ztunnel accepts or removes it. Its scope is the one the
 * resource claims when that much could be read; otherwise Global, because a policy whose reach is unknown may
 * reach any workload.
 */
export function authorizationFromXds(name: string, any: Any | undefined): { policy: Authorization; rejected?: string } {
  // The stand-in of a dry-run policy is dry-run too: a policy that never changes traffic cannot start to.
  const reject = (
    why: string,
    scope: RbacScope = 'Global',
    dryRun = false,
  ): { policy: Authorization; rejected: string } => ({
    policy: { ...failClosedPolicy(name, scope, why), dryRun },
    rejected: why,
  });
  let a;
  try {
    a = any === undefined ? undefined : anyUnpack(any, AuthorizationSchema);
  } catch (e) {
    return reject(`cannot decode Authorization: ${(e as Error).message}`);
  }
  if (a === undefined) return reject('not an istio.security.Authorization');
  const scope = RBAC_SCOPES[a.scope];
  if (scope === undefined) return reject(`unknown scope ${a.scope}`, 'Global', a.dryRun);
  const action = RBAC_ACTIONS[a.action];
  if (action === undefined) return reject(`unknown action ${a.action}`, scope, a.dryRun);
  const rules: RbacMatch[][][] = [];
  for (const r of a.rules) {
    const clauses: RbacMatch[][] = [];
    for (const c of r.clauses) {
      const matches: RbacMatch[] = [];
      for (const m of c.matches) {
        const x = matchFromXds(m);
        if (typeof x === 'string') return reject(x, scope, a.dryRun);
        matches.push(x);
      }
      clauses.push(matches);
    }
    rules.push(clauses);
  }
  return { policy: { name: a.name, namespace: a.namespace, scope, action, rules, dryRun: a.dryRun } };
}
