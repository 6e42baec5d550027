/**
 * A waypoint's model → its `amesh.waypoint.v1.Waypoint` resource (proto/amesh/waypoint/v1/waypoint.proto,
 * docs/waypoint-xds.md), packed and versioned by the hash of its bytes as ztunnel's resources are.
 */
import { create, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { anyPack, durationFromMs } from '@bufbuild/protobuf/wkt';
import {
  Action,
  WaypointSchema,
  type BackendSchema,
  type ExtAuthzProviderSchema,
  type HeaderModifierSchema,
  type PathMatchSchema,
  type PathRewriteSchema,
  type RouteSchema,
  type LoadBalancerSchema,
  type TrafficPolicySchema,
} from '../../api/amesh/waypoint/v1/waypoint_pb.js';
import type {
  BackendModel,
  HeaderModifierModel,
  PathMatchModel,
  PathRewriteModel,
  RouteModel,
  ServiceRoutesModel,
} from '../model/http-routes.js';
import type { L7PolicyModel } from '../model/waypoint-policies.js';
import type { TrafficPolicyModel } from '../model/traffic-policies.js';
import type { ExtAuthzProviderModel } from '../model/extension-providers.js';
import type { WaypointResourceModel } from '../model/waypoint-resources.js';
import { stringMatch, version, type XdsResource } from './convert.js';

export const WAYPOINT_TYPE = `type.googleapis.com/${WaypointSchema.typeName}`;

function headerModifier(m: HeaderModifierModel | undefined): MessageInitShape<typeof HeaderModifierSchema> | undefined {
  return m === undefined
    ? undefined
    : { set: m.set.map((h) => ({ ...h })), add: m.add.map((h) => ({ ...h })), remove: [...m.remove] };
}

function pathRewrite(p: PathRewriteModel | undefined): MessageInitShape<typeof PathRewriteSchema> | undefined {
  if (p === undefined) return undefined;
  return { kind: 'full' in p ? { case: 'full', value: p.full } : { case: 'prefix', value: p.prefix } };
}

function pathKind(p: PathMatchModel): MessageInitShape<typeof PathMatchSchema>['kind'] {
  if ('exact' in p) return { case: 'exact', value: p.exact };
  if ('prefix' in p) return { case: 'prefix', value: p.prefix };
  if ('stringPrefix' in p) return { case: 'stringPrefix', value: p.stringPrefix };
  return { case: 'regex', value: p.regex };
}

function backend(b: BackendModel): MessageInitShape<typeof BackendSchema> {
  const { subset, trafficPolicy, ...rest } = b;
  return {
    ...rest,
    ...(subset === undefined ? {} : { subset: subset.name, endpoints: [...(subset.endpoints ?? [])] }),
    ...(trafficPolicy === undefined ? {} : { trafficPolicy: trafficPolicyMessage(trafficPolicy) }),
  };
}

function hashKeyMessage(
  hash: NonNullable<TrafficPolicyModel['loadBalancer']>['hash'],
): MessageInitShape<typeof LoadBalancerSchema>['hashKey'] {
  if (hash === undefined) return { case: undefined };
  if ('header' in hash) return { case: 'httpHeaderName', value: hash.header };
  if ('sourceIp' in hash) return { case: 'useSourceIp', value: true };
  if ('query' in hash) return { case: 'httpQueryParameterName', value: hash.query };
  const { name, path, ttlMs } = hash.cookie;
  return { case: 'httpCookie', value: { name, path, ttl: ttlMs === undefined ? undefined : durationFromMs(ttlMs) } };
}

function trafficPolicyMessage(p: TrafficPolicyModel): MessageInitShape<typeof TrafficPolicySchema> {
  const lb = p.loadBalancer;
  const od = p.outlierDetection;
  return {
    ...(lb === undefined ? {} : { loadBalancer: { simple: lb.simple, hashKey: hashKeyMessage(lb.hash) } }),
    ...(od === undefined
      ? {}
      : {
          outlierDetection: {
            consecutive5xxErrors: od.consecutive5xxErrors,
            consecutiveGatewayErrors: od.consecutiveGatewayErrors,
            interval: durationFromMs(od.intervalMs),
            baseEjectionTime: durationFromMs(od.baseEjectionTimeMs),
            maxEjectionPercent: od.maxEjectionPercent,
            minHealthPercent: od.minHealthPercent,
          },
        }),
    ...(p.connectionPool === undefined ? {} : { connectionPool: { ...p.connectionPool } }),
  };
}

function routeAction(a: RouteModel['action']): MessageInitShape<typeof RouteSchema>['action'] {
  if ('forward' in a) return { case: 'forward', value: { backends: a.forward.map(backend) } };
  if ('redirect' in a) return { case: 'redirect', value: { ...a.redirect, path: pathRewrite(a.redirect.path) } };
  return { case: 'directStatus', value: a.directStatus };
}

function route(r: RouteModel): MessageInitShape<typeof RouteSchema> {
  const a = r.action;
  return {
    name: r.name,
    matches: r.matches.map((m) => ({
      path: m.path === undefined ? undefined : { kind: pathKind(m.path) },
      headers: m.headers.map(valueMatch),
      queryParams: m.queryParams.map(valueMatch),
      method: m.method,
    })),
    requestHeaders: headerModifier(r.requestHeaders),
    responseHeaders: headerModifier(r.responseHeaders),
    action: routeAction(a),
    rewrite: r.rewrite === undefined ? undefined : { hostname: r.rewrite.hostname, path: pathRewrite(r.rewrite.path) },
    timeout: r.timeoutMs === undefined ? undefined : durationFromMs(r.timeoutMs),
    retries:
      r.retries === undefined
        ? undefined
        : {
            attempts: r.retries.attempts,
            retryOn: [...r.retries.retryOn],
            retriableStatusCodes: [...r.retries.statusCodes],
            perTryTimeout:
              r.retries.perTryTimeoutMs === undefined ? undefined : durationFromMs(r.retries.perTryTimeoutMs),
          },
    mirrors: (r.mirrors ?? []).map((m) => ({ backend: backend(m.backend), percentage: m.percentage })),
    fault:
      r.fault === undefined
        ? undefined
        : {
            delay:
              r.fault.delay === undefined
                ? undefined
                : { fixedDelay: durationFromMs(r.fault.delay.ms), percentage: r.fault.delay.percentage },
            abort: r.fault.abort === undefined ? undefined : { ...r.fault.abort },
          },
  };
}

function valueMatch(m: { name: string } & ({ exact: string } | { regex: string })) {
  return {
    name: m.name,
    value: 'exact' in m ? ({ case: 'exact', value: m.exact } as const) : ({ case: 'regex', value: m.regex } as const),
  };
}

function serviceRoutes(s: ServiceRoutesModel) {
  return { namespace: s.namespace, hostname: s.hostname, port: s.port, routes: s.routes.map(route) };
}

const ACTIONS = { ALLOW: Action.ALLOW, DENY: Action.DENY, AUDIT: Action.AUDIT, CUSTOM: Action.CUSTOM } as const;

function policy(p: L7PolicyModel) {
  const addr = (a: { address: Uint8Array; length: number }) => ({ address: a.address, length: a.length });
  return {
    name: p.name,
    action: ACTIONS[p.action],
    provider: p.provider,
    services: [...p.services],
    dryRun: p.dryRun,
    rules: p.rules.map((r) => ({
      from: r.from.map((s) => ({
        principals: s.principals.map(stringMatch),
        notPrincipals: s.notPrincipals.map(stringMatch),
        requestPrincipals: s.requestPrincipals.map(stringMatch),
        notRequestPrincipals: s.notRequestPrincipals.map(stringMatch),
        namespaces: s.namespaces.map(stringMatch),
        notNamespaces: s.notNamespaces.map(stringMatch),
        ipBlocks: s.ipBlocks.map(addr),
        notIpBlocks: s.notIpBlocks.map(addr),
        remoteIpBlocks: s.remoteIpBlocks.map(addr),
        notRemoteIpBlocks: s.notRemoteIpBlocks.map(addr),
      })),
      to: r.to.map((o) => ({
        hosts: o.hosts.map(stringMatch),
        notHosts: o.notHosts.map(stringMatch),
        ports: [...o.ports],
        notPorts: [...o.notPorts],
        methods: o.methods.map(stringMatch),
        notMethods: o.notMethods.map(stringMatch),
        paths: o.paths.map(stringMatch),
        notPaths: o.notPaths.map(stringMatch),
      })),
      when: r.when.map((c) => ({
        key: c.key,
        values: c.values.map(stringMatch),
        notValues: c.notValues.map(stringMatch),
        cidrs: c.cidrs.map(addr),
        notCidrs: c.notCidrs.map(addr),
      })),
    })),
  };
}

function extAuthzProvider(p: ExtAuthzProviderModel): MessageInitShape<typeof ExtAuthzProviderSchema> {
  const { api, timeoutMs, ...rest } = p;
  return {
    ...rest,
    timeout: timeoutMs === undefined ? undefined : durationFromMs(timeoutMs),
    api:
      'http' in api
        ? {
            case: 'http',
            value: {
              pathPrefix: api.http.pathPrefix,
              includeRequestHeadersInCheck: api.http.includeRequestHeadersInCheck.map(stringMatch),
              includeAdditionalHeadersInCheck: { ...api.http.includeAdditionalHeadersInCheck },
              headersToUpstreamOnAllow: api.http.headersToUpstreamOnAllow.map(stringMatch),
              headersToDownstreamOnDeny: api.http.headersToDownstreamOnDeny.map(stringMatch),
              headersToDownstreamOnAllow: api.http.headersToDownstreamOnAllow.map(stringMatch),
            },
          }
        : { case: 'grpc', value: {} },
  };
}

export function waypointResource(name: string, w: WaypointResourceModel): XdsResource {
  const msg = create(WaypointSchema, {
    services: w.services.map(serviceRoutes),
    policies: w.policies.map(policy),
    extAuthzProviders: w.extAuthzProviders.map(extAuthzProvider),
    requestAuthentications: w.requestAuthentications.map((ra) => ({
      name: ra.name,
      services: [...ra.services],
      rules: ra.rules.map((r) => ({
        ...r,
        audiences: [...r.audiences],
        fromHeaders: r.fromHeaders.map((h) => ({ ...h })),
        fromParams: [...r.fromParams],
        fromCookies: [...r.fromCookies],
        outputClaimToHeaders: r.outputClaimToHeaders.map((c) => ({ ...c })),
      })),
    })),
    accessLog: w.accessLog,
    servicePolicies: w.servicePolicies.map((p) => ({
      namespace: p.namespace,
      hostname: p.hostname,
      port: p.port,
      trafficPolicy: trafficPolicyMessage(p.trafficPolicy),
    })),
    listeners: w.listeners.map((l) => ({
      name: l.name,
      port: l.port,
      protocol: l.protocol,
      hostname: l.hostname,
      credentialNames: [...l.credentialNames],
      clientCaNames: [...(l.clientCaNames ?? [])],
      clientCertificateOptional: l.clientCertificateOptional ?? false,
      terminate: l.terminate ?? false,
      clientSubjectAltNames: [...(l.clientSubjectAltNames ?? [])],
      clientCertificateHashes: [...(l.clientCertificateHashes ?? [])],
      clientCertificateSpkis: [...(l.clientCertificateSpkis ?? [])],
      virtualHosts: l.virtualHosts.map((v) => ({ hostname: v.hostname, routes: v.routes.map(route) })),
    })),
  });
  return { name, version: version(toBinary(WaypointSchema, msg)), resource: anyPack(WaypointSchema, msg) };
}
