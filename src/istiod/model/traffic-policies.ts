/**
 * A DestinationRule's `trafficPolicy`, as the waypoints and gateways apply it to the endpoints of a backend:
 * - which policy applies to a host, subset and port, as istio `pilot/pkg/networking/util/util.go`
 *   `MergeSubsetTrafficPolicy` merges them: the rule's `portLevelSettings` entry for the port replaces the rule's
 *   policy wholesale (fields it leaves out take their defaults), then the subset's policy (itself replaced by its own
 *   port-level entry) overrides the fields it sets, every field when it came from a port-level entry;
 * - `loadBalancer`: `simple` ROUND_ROBIN, LEAST_REQUEST (Istio's default), RANDOM, and `consistentHash` by header,
 *   cookie (with `ttl`: made up when missing), source IP or query parameter;
 * - `outlierDetection` with the values istio `cluster_traffic_policy.go` `applyOutlierDetection` gives Envoy, and
 *   Envoy's defaults for those it leaves unset: 5 consecutive 5xx, gateway errors not counted, a 10 s interval,
 *   30 s base ejection, at most 10% ejected, no panic threshold unless `minHealthPercent`.
 * - `connectionPool`: the circuit breakers Istio sets from it (`applyConnectionPool`): `tcp.maxConnections`,
 *   `http.http1MaxPendingRequests`, `http2MaxRequests`, `maxRetries` (0 or unset: no limit, as Istio's defaults)
 *   and `maxRequestsPerConnection`.
 * What else a policy sets (connection timeouts and keep-alives, TLS origination, PASSTHROUGH balancing, locality
 * settings) is not applied, and said so.
 */
import { protoDuration } from './virtual-services.js';

export interface LoadBalancerModel {
  /** ROUND_ROBIN, LEAST_REQUEST, RANDOM; empty: the proxy's default (LEAST_REQUEST). */
  readonly simple: string;
  readonly hash?:
    | { readonly header: string }
    | { readonly cookie: { readonly name: string; readonly path: string; readonly ttlMs: number | undefined } }
    | { readonly sourceIp: true }
    | { readonly query: string };
}

export interface OutlierDetectionModel {
  readonly consecutive5xxErrors: number;
  readonly consecutiveGatewayErrors: number;
  readonly intervalMs: number;
  readonly baseEjectionTimeMs: number;
  readonly maxEjectionPercent: number;
  readonly minHealthPercent: number;
}

/** Circuit breaker thresholds; 0: no limit. */
export interface ConnectionPoolModel {
  readonly maxConnections: number;
  readonly maxPendingRequests: number;
  readonly maxRequests: number;
  readonly maxRetries: number;
  readonly maxRequestsPerConnection: number;
}

export interface TrafficPolicyModel {
  readonly loadBalancer?: LoadBalancerModel;
  readonly outlierDetection?: OutlierDetectionModel;
  readonly connectionPool?: ConnectionPoolModel;
}

type Json = Readonly<Record<string, unknown>>;
const obj = (v: unknown): Json | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : undefined;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const ms = (v: unknown, fallback: number): number => (typeof v === 'string' ? protoDuration(v) : undefined) ?? fallback;

/** The parts of a policy Istio merges field by field (TrafficPolicy without its port-level settings). */
interface Parts {
  readonly loadBalancer?: Json;
  readonly outlierDetection?: Json;
  readonly connectionPool?: Json;
  readonly tls?: Json;
}

const parts = (p: Json | undefined): Parts | undefined =>
  p === undefined
    ? undefined
    : {
        loadBalancer: obj(p['loadBalancer']),
        outlierDetection: obj(p['outlierDetection']),
        connectionPool: obj(p['connectionPool']),
        tls: obj(p['tls']),
      };

/** A policy for `port`: its port-level entry, when it has one, replacing it wholesale (`GetPortLevelTrafficPolicy`). */
function forPort(policy: Json | undefined, port: number): { parts: Parts | undefined; portLevel: boolean } {
  if (policy === undefined) return { parts: undefined, portLevel: false };
  const settings = Array.isArray(policy['portLevelSettings']) ? policy['portLevelSettings'] : [];
  const entry = settings.map(obj).find((s) => num(obj(s?.['port'])?.['number']) === port);
  return entry === undefined ? { parts: parts(policy), portLevel: false } : { parts: parts(entry), portLevel: true };
}

/** The rule's and the subset's policies for `port`, merged as `MergeSubsetTrafficPolicy` does. */
export function mergedPolicy(rule: unknown, subset: unknown, port: number): Parts | undefined {
  const base = forPort(obj(rule), port).parts;
  const s = forPort(obj(subset), port);
  if (s.parts === undefined) return base;
  if (base === undefined) return s.parts;
  const pick = <K extends keyof Parts>(k: K): Parts[K] =>
    s.parts![k] !== undefined || s.portLevel ? s.parts![k] : base[k];
  return {
    loadBalancer: pick('loadBalancer'),
    outlierDetection: pick('outlierDetection'),
    connectionPool: pick('connectionPool'),
    tls: pick('tls'),
  };
}

const SIMPLE = new Set(['ROUND_ROBIN', 'LEAST_REQUEST', 'LEAST_CONN', 'RANDOM', 'UNSPECIFIED']);

/** The model of merged policy `p`, and what of it is not applied. */
export function trafficPolicyModel(p: Parts | undefined): {
  model: TrafficPolicyModel | undefined;
  warnings: string[];
} {
  if (p === undefined) return { model: undefined, warnings: [] };
  const warnings: string[] = [];
  let connectionPool: ConnectionPoolModel | undefined;
  const cp = p.connectionPool;
  if (cp !== undefined) {
    const tcp = obj(cp['tcp']) ?? {};
    const http = obj(cp['http']) ?? {};
    const positive = (v: unknown): number => Math.max(0, Math.floor(num(v) ?? 0));
    connectionPool = {
      maxConnections: positive(tcp['maxConnections']),
      maxPendingRequests: positive(http['http1MaxPendingRequests']),
      maxRequests: positive(http['http2MaxRequests']),
      maxRetries: positive(http['maxRetries']),
      maxRequestsPerConnection: positive(http['maxRequestsPerConnection']),
    };
    const applied = new Set([
      'maxConnections',
      'http1MaxPendingRequests',
      'http2MaxRequests',
      'maxRetries',
      'maxRequestsPerConnection',
    ]);
    for (const [where, o] of [
      ['tcp', tcp],
      ['http', http],
    ] as const)
      for (const k of Object.keys(o)) if (!applied.has(k)) warnings.push(`connectionPool.${where}.${k} is not applied`);
  }
  const tlsMode = str(p.tls?.['mode']);
  if (p.tls !== undefined && tlsMode !== 'ISTIO_MUTUAL' && tlsMode !== '')
    warnings.push(`tls mode ${tlsMode} is not applied`);
  let loadBalancer: LoadBalancerModel | undefined;
  const lb = p.loadBalancer;
  if (lb !== undefined) {
    for (const k of ['localityLbSetting', 'warmupDurationSecs', 'warmup'])
      if (lb[k] !== undefined) warnings.push(`loadBalancer.${k} is not applied`);
    let simple = str(lb['simple']);
    if (simple === 'LEAST_CONN') simple = 'LEAST_REQUEST';
    if (simple === 'UNSPECIFIED') simple = '';
    if (simple !== '' && !SIMPLE.has(simple)) {
      warnings.push(`loadBalancer.simple ${simple} is not applied; LEAST_REQUEST is`);
      simple = '';
    }
    const ch = obj(lb['consistentHash']);
    let hash: LoadBalancerModel['hash'];
    if (ch !== undefined) {
      const cookie = obj(ch['httpCookie']);
      if (str(ch['httpHeaderName']) !== '') hash = { header: str(ch['httpHeaderName']).toLowerCase() };
      else if (cookie !== undefined && str(cookie['name']) !== '')
        hash = {
          cookie: {
            name: str(cookie['name']),
            path: str(cookie['path']),
            ttlMs: typeof cookie['ttl'] === 'string' ? protoDuration(cookie['ttl']) : undefined,
          },
        };
      else if (ch['useSourceIp'] === true) hash = { sourceIp: true };
      else if (str(ch['httpQueryParameterName']) !== '') hash = { query: str(ch['httpQueryParameterName']) };
      else warnings.push('loadBalancer.consistentHash names no hash key; it is not applied');
    }
    loadBalancer = { simple, ...(hash === undefined ? {} : { hash }) };
  }
  let outlierDetection: OutlierDetectionModel | undefined;
  const od = p.outlierDetection;
  if (od !== undefined) {
    if (od['splitExternalLocalOriginErrors'] === true)
      warnings.push('outlierDetection.splitExternalLocalOriginErrors is not applied');
    outlierDetection = {
      consecutive5xxErrors: num(od['consecutive5xxErrors']) ?? 5,
      consecutiveGatewayErrors: num(od['consecutiveGatewayErrors']) ?? 0,
      intervalMs: ms(od['interval'], 10_000),
      baseEjectionTimeMs: ms(od['baseEjectionTime'], 30_000),
      maxEjectionPercent: (num(od['maxEjectionPercent']) ?? 0) > 0 ? num(od['maxEjectionPercent'])! : 10,
      minHealthPercent: Math.max(0, num(od['minHealthPercent']) ?? 0),
    };
  }
  if (loadBalancer === undefined && outlierDetection === undefined && connectionPool === undefined)
    return { model: undefined, warnings };
  return {
    model: {
      ...(loadBalancer === undefined ? {} : { loadBalancer }),
      ...(outlierDetection === undefined ? {} : { outlierDetection }),
      ...(connectionPool === undefined ? {} : { connectionPool }),
    },
    warnings,
  };
}

/** What of `policy` (a rule's or a subset's, its port-level entries included) is not applied. */
export function policyWarnings(policy: unknown): string[] {
  const p = obj(policy);
  if (p === undefined) return [];
  const out = trafficPolicyModel(parts(p)).warnings;
  const settings = Array.isArray(p['portLevelSettings']) ? p['portLevelSettings'] : [];
  for (const entry of settings.map(obj))
    for (const w of trafficPolicyModel(parts(entry)).warnings)
      out.push(`portLevelSettings port ${String(num(obj(entry?.['port'])?.['number']) ?? '?')}: ${w}`);
  if (p['proxyProtocol'] !== undefined) out.push('proxyProtocol is not applied');
  if (p['tunnel'] !== undefined) out.push('tunnel is not applied');
  return out;
}
