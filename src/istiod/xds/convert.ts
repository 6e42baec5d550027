import { createHash } from 'node:crypto';
import { create, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { anyPack, EmptySchema } from '@bufbuild/protobuf/wkt';
import type { Any } from '@bufbuild/protobuf/wkt';
import {
  AddressSchema,
  PortListSchema,
  type Address,
  type GatewayAddressSchema,
} from '../../api/istio/workload/workload_pb.js';
import {
  AuthorizationSchema,
  type MatchSchema,
  type StringMatchSchema,
  type Authorization,
} from '../../api/istio/security/authorization_pb.js';
import type {
  AuthorizationModel,
  GatewayAddressModel,
  MatchModel,
  ServiceModel,
  StringMatchModel,
  WorkloadModel,
} from '../model/types.js';

/** xDS type URLs ztunnel subscribes to (ztunnel `src/xds/client.rs`). */
export const ADDRESS_TYPE = 'type.googleapis.com/istio.workload.Address';
export const AUTHORIZATION_TYPE = 'type.googleapis.com/istio.security.Authorization';

/** A resource ready to send: its Any and a version that is a hash of its bytes (stable across restarts). */
export interface XdsResource {
  readonly name: string;
  readonly version: string;
  readonly resource: Any;
}

export function version(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 16);
}

/** A waypoint's address: by namespaced hostname or by network address (the `destination` oneof). */
function gatewayAddress(g: GatewayAddressModel): MessageInitShape<typeof GatewayAddressSchema> {
  return {
    destination:
      'hostname' in g
        ? { case: 'hostname', value: { ...g.hostname } }
        : { case: 'address', value: { network: g.address.network, address: g.address.address } },
    hboneMtlsPort: g.hboneMtlsPort,
  };
}

function workloadAddress({ waypoint, ...w }: WorkloadModel): Address {
  return create(AddressSchema, {
    type: {
      case: 'workload',
      value: {
        ...w,
        ...(waypoint === undefined ? {} : { waypoint: gatewayAddress(waypoint) }),
        addresses: [...w.addresses],
        services: Object.fromEntries(
          Object.entries(w.services).map(([k, ports]) => [
            k,
            create(PortListSchema, { ports: ports.map((p) => ({ ...p })) }),
          ]),
        ),
        authorizationPolicies: [...w.authorizationPolicies],
      },
    },
  });
}

function serviceAddress(s: ServiceModel): Address {
  return create(AddressSchema, {
    type: {
      case: 'service',
      value: {
        name: s.name,
        namespace: s.namespace,
        hostname: s.hostname,
        addresses: s.addresses.map((a) => ({
          network: a.network,
          address: a.address,
          ...(a.length === undefined ? {} : { length: a.length }),
        })),
        ports: s.ports.map((p) => ({ ...p })),
        subjectAltNames: [...s.subjectAltNames],
        ...(s.loadBalancing === undefined
          ? {}
          : {
              loadBalancing: {
                routingPreference: [...s.loadBalancing.routingPreference],
                mode: s.loadBalancing.mode,
                healthPolicy: s.loadBalancing.healthPolicy,
              },
            }),
        canonical: s.canonical,
        ...(s.waypoint === undefined ? {} : { waypoint: gatewayAddress(s.waypoint) }),
      },
    },
  });
}

export function stringMatch(m: StringMatchModel): MessageInitShape<typeof StringMatchSchema> {
  if ('exact' in m) return { matchType: { case: 'exact', value: m.exact } };
  if ('prefix' in m) return { matchType: { case: 'prefix', value: m.prefix } };
  if ('suffix' in m) return { matchType: { case: 'suffix', value: m.suffix } };
  return { matchType: { case: 'presence', value: create(EmptySchema) } };
}

function match(m: MatchModel): MessageInitShape<typeof MatchSchema> {
  return {
    namespaces: m.namespaces.map(stringMatch),
    notNamespaces: m.notNamespaces.map(stringMatch),
    principals: m.principals.map(stringMatch),
    notPrincipals: m.notPrincipals.map(stringMatch),
    serviceAccounts: m.serviceAccounts.map((s) => ({ ...s })),
    notServiceAccounts: m.notServiceAccounts.map((s) => ({ ...s })),
    sourceIps: m.sourceIps.map((a) => ({ ...a })),
    notSourceIps: m.notSourceIps.map((a) => ({ ...a })),
    destinationIps: m.destinationIps.map((a) => ({ ...a })),
    notDestinationIps: m.notDestinationIps.map((a) => ({ ...a })),
    destinationPorts: [...m.destinationPorts],
    notDestinationPorts: [...m.notDestinationPorts],
  };
}

function authorization(a: AuthorizationModel): Authorization {
  return create(AuthorizationSchema, {
    name: a.name,
    namespace: a.namespace,
    scope: a.scope,
    action: a.action,
    dryRun: a.dryRun,
    rules: a.rules.map((r) => ({ clauses: r.clauses.map((c) => ({ matches: c.matches.map(match) })) })),
  });
}

export function addressResource(name: string, a: { workload: WorkloadModel } | { service: ServiceModel }): XdsResource {
  const msg = 'workload' in a ? workloadAddress(a.workload) : serviceAddress(a.service);
  return { name, version: version(toBinary(AddressSchema, msg)), resource: anyPack(AddressSchema, msg) };
}

export function authorizationResource(name: string, a: AuthorizationModel): XdsResource {
  const msg = authorization(a);
  return { name, version: version(toBinary(AuthorizationSchema, msg)), resource: anyPack(AuthorizationSchema, msg) };
}
