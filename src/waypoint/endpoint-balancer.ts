/**
 * How the proxy picks an endpoint of a route's backend, as Envoy's cluster does with the DestinationRule traffic
 * policy Istio gives it (`amesh.waypoint.v1.TrafficPolicy`, docs/waypoint-xds.md):
 * - `consistentHash`: the endpoint whose rendezvous hash with the request's key (a header, a cookie, the client's
 *   address, a query parameter) is highest, so one key keeps its endpoint while that endpoint stays; a request
 *   without the key is balanced as if there were no hash. Rendezvous hashing rather than Envoy's ring hash or Maglev:
 *   which endpoint a key lands on is each proxy's own (Envoys disagree too); what Istio promises is that it stays,
 *   and that only the keys of an endpoint that goes move. A cookie with a `ttl` that the request lacks is made up
 *   here and set on the response, as Envoy's cookie hash does;
 * - else ROUND_ROBIN, RANDOM, or LEAST_REQUEST (Istio's default): of two endpoints picked at random, the one with
 *   fewer requests in flight from this proxy;
 * - `outlierDetection`: an endpoint answering `consecutive_5xx_errors` 5xx in a row, or `consecutive_gateway_errors`
 *   502/503/504 in a row (a failure to connect, a reset or a timeout counts as both), is left out for
 *   `base_ejection_time` times the number of its ejections, which an `interval` without one lowers by one; no more
 *   than `max_ejection_percent` of the endpoints are out at once (an ejection past it is not made); below
 *   `min_health_percent` endpoints in, the ejections are disregarded.
 * A retry goes to an endpoint the request has not tried while there is one (Istio's `previous_hosts` predicate).
 * The state is this proxy's own, per backend (Service, port and subset), as each Envoy keeps its own.
 */
import { randomBytes } from 'node:crypto';
import { durationMs } from '@bufbuild/protobuf/wkt';
import type { LoadBalancer, TrafficPolicy } from '../api/amesh/waypoint/v1/waypoint_pb.js';
import type { EndpointChooser } from '../ztunnel/state/upstream.js';
import type { Workload } from '../ztunnel/state/workload.js';

export interface EndpointPolicy {
  readonly simple: 'ROUND_ROBIN' | 'LEAST_REQUEST' | 'RANDOM';
  readonly hash:
    | { readonly t: 'header'; readonly name: string }
    | { readonly t: 'cookie'; readonly name: string; readonly path: string; readonly ttlMs: number | undefined }
    | { readonly t: 'source-ip' }
    | { readonly t: 'query'; readonly name: string }
    | undefined;
  readonly outlier:
    | {
        readonly consecutive5xx: number;
        readonly consecutiveGateway: number;
        readonly intervalMs: number;
        readonly baseEjectionMs: number;
        readonly maxEjectionPercent: number;
        readonly minHealthPercent: number;
      }
    | undefined;
}

/** No DestinationRule: Istio's default balancing, nothing ejected. */
export const DEFAULT_ENDPOINT_POLICY: EndpointPolicy = Object.freeze({
  simple: 'LEAST_REQUEST',
  hash: undefined,
  outlier: undefined,
});

/** Envoy's cap on one ejection (`max_ejection_time`'s default), unless the base itself is longer. */
const MAX_EJECTION_MS = 300_000;

function hashFromXds(k: LoadBalancer['hashKey'] | undefined): EndpointPolicy['hash'] {
  switch (k?.case) {
    case 'httpHeaderName':
      return { t: 'header', name: k.value.toLowerCase() };
    case 'httpCookie':
      return {
        t: 'cookie',
        name: k.value.name,
        path: k.value.path,
        ttlMs: k.value.ttl === undefined ? undefined : durationMs(k.value.ttl),
      };
    case 'useSourceIp':
      return { t: 'source-ip' };
    case 'httpQueryParameterName':
      return { t: 'query', name: k.value };
    default:
      return undefined;
  }
}

export function endpointPolicyFromXds(p: TrafficPolicy | undefined): EndpointPolicy {
  if (p === undefined) return DEFAULT_ENDPOINT_POLICY;
  const lb = p.loadBalancer;
  const od = p.outlierDetection;
  const ms = (d: Parameters<typeof durationMs>[0] | undefined, fallback: number): number =>
    d === undefined ? fallback : durationMs(d);
  return Object.freeze({
    simple: lb?.simple === 'ROUND_ROBIN' || lb?.simple === 'RANDOM' ? lb.simple : 'LEAST_REQUEST',
    hash: hashFromXds(lb?.hashKey),
    outlier:
      od === undefined
        ? undefined
        : {
            consecutive5xx: od.consecutive5xxErrors,
            consecutiveGateway: od.consecutiveGatewayErrors,
            intervalMs: ms(od.interval, 10_000),
            baseEjectionMs: ms(od.baseEjectionTime, 30_000),
            maxEjectionPercent: od.maxEjectionPercent,
            minHealthPercent: od.minHealthPercent,
          },
  } satisfies EndpointPolicy);
}

/** What of a request the hash key may come from. */
export interface RequestKeySource {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The request's path with its query. */
  readonly url: string;
  readonly sourceIp: string;
}

/** How an attempt on an endpoint ended: its status, or a failure (to connect, a reset, a timeout); undefined: not sent. */
export type AttemptResult = number | 'failure' | undefined;

/** An endpoint picked for one attempt: counted in flight until `end`. */
export interface Lease {
  /** The endpoint's UID; undefined: no balancer picked it. */
  readonly endpoint: string | undefined;
  end(result: AttemptResult): void;
}

/** The lease of a destination no balancer picked. */
export const NO_LEASE: Lease = Object.freeze({ endpoint: undefined, end: () => undefined });

interface EndpointState {
  active: number;
  fails5xx: number;
  failsGateway: number;
  ejections: number;
  /** performance.now() until which it is out; 0: not ejected. */
  ejectedUntil: number;
}

interface ClusterState {
  next: number;
  /** How many endpoints the last pick saw: the base of the ejection percentages. */
  size: number;
  readonly endpoints: Map<string, EndpointState>;
}

/** Forgets the endpoints no longer among `all` that have nothing in flight (pods gone). */
function forgetGone(c: ClusterState, all: readonly { readonly w: Workload }[]): void {
  const present = new Set(all.map((x) => x.w.uid));
  for (const [uid, ep] of c.endpoints) if (!present.has(uid) && ep.active === 0) c.endpoints.delete(uid);
}

/** FNV-1a over a string, for rendezvous hashing. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  // A final mix, so that keys differing in their last characters spread over the whole range.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  return h >>> 0;
}

function cookieValue(header: string | string[] | undefined, name: string): string | undefined {
  const lines = header === undefined ? [] : [header].flat();
  for (const line of lines)
    for (const part of line.split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0 && part.slice(0, eq).trim() === name)
        return part
          .slice(eq + 1)
          .trim()
          .replace(/^"(.*)"$/, '$1');
    }
  return undefined;
}

function queryValue(url: string, name: string): string | undefined {
  const q = url.indexOf('?');
  if (q < 0) return undefined;
  const v = new URLSearchParams(url.slice(q + 1)).get(name);
  return v ?? undefined;
}

/**
 * A request's hash key under `p` (undefined: none, so it is balanced as without a hash), taken once per request so
 * that its retries keep it; and the `Set-Cookie` for its response when the key is a cookie made up here.
 */
export function hashKey(
  p: EndpointPolicy,
  r: RequestKeySource,
): { readonly key: string | undefined; readonly setCookie?: string } {
  const h = p.hash;
  if (h === undefined) return { key: undefined };
  switch (h.t) {
    case 'header': {
      const v = r.headers[h.name];
      return { key: Array.isArray(v) ? v.join(',') : v };
    }
    case 'source-ip':
      return { key: r.sourceIp };
    case 'query':
      return { key: queryValue(r.url, h.name) };
    case 'cookie': {
      const v = cookieValue(r.headers['cookie'], h.name);
      if (v !== undefined || h.ttlMs === undefined) return { key: v };
      const made = randomBytes(8).toString('hex');
      const seconds = Math.floor(h.ttlMs / 1000);
      // A ttl of 0 makes a session cookie, as Envoy's does.
      const maxAge = seconds > 0 ? `; Max-Age=${String(seconds)}` : '';
      const path = h.path === '' ? '' : `; Path=${h.path}`;
      return { key: made, setCookie: `${h.name}="${made}"${maxAge}${path}; HttpOnly` };
    }
  }
}

export class EndpointBalancer {
  private readonly clusters = new Map<string, ClusterState>();

  constructor(
    private readonly random: () => number = Math.random,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * The chooser for one pick from `cluster` (a backend: Service, port, subset) under `policy`, for a request whose
   * hash key (`hashKey`) is `key`, and the lease of what it picked, to take once it has. The endpoints in `tried`
   * are left out while others are usable.
   */
  pick(
    cluster: string,
    policy: EndpointPolicy,
    key: string | undefined,
    /** The endpoints the request's earlier attempts went to. */
    tried?: ReadonlySet<string>,
  ): { readonly chooser: EndpointChooser; readonly lease: () => Lease } {
    let c = this.clusters.get(cluster);
    if (c === undefined) this.clusters.set(cluster, (c = { next: 0, size: 0, endpoints: new Map() }));
    const state = c;
    let picked: string | undefined;
    const now = this.now();
    const chooser: EndpointChooser = {
      usable: (all) => {
        state.size = all.length;
        if (state.endpoints.size > all.length) forgetGone(state, all);
        const od = policy.outlier;
        let inn = all;
        if (od !== undefined) {
          const healthy = all.filter((x) => (state.endpoints.get(x.w.uid)?.ejectedUntil ?? 0) <= now);
          // Envoy's panic threshold: with too few endpoints in, every endpoint is used again.
          if (healthy.length * 100 >= od.minHealthPercent * all.length) inn = healthy;
        }
        // A retry goes to an endpoint not tried yet while there is one (Istio's previous_hosts predicate).
        if (tried === undefined || tried.size === 0) return inn;
        const fresh = inn.filter((x) => !tried.has(x.w.uid));
        return fresh.length > 0 ? fresh : inn;
      },
      choose: (cands) => {
        const p = this.choose(state, policy, key, cands);
        picked = p?.w.uid;
        return p;
      },
    };
    const lease = (): Lease => {
      const uid = picked;
      if (uid === undefined) return NO_LEASE;
      const ep = this.endpoint(state, uid);
      ep.active++;
      let ended = false;
      return {
        endpoint: uid,
        end: (result) => {
          if (ended) return;
          ended = true;
          ep.active--;
          if (result !== undefined && policy.outlier !== undefined) this.record(state, ep, policy.outlier, result);
          // An endpoint with nothing to remember is forgotten, so that pods come and gone leave no state behind.
          if (ep.active === 0 && ep.fails5xx === 0 && ep.failsGateway === 0 && ep.ejections === 0)
            state.endpoints.delete(uid);
        },
      };
    };
    return { chooser, lease };
  }

  private endpoint(c: ClusterState, uid: string): EndpointState {
    let ep = c.endpoints.get(uid);
    if (ep === undefined)
      c.endpoints.set(uid, (ep = { active: 0, fails5xx: 0, failsGateway: 0, ejections: 0, ejectedUntil: 0 }));
    return ep;
  }

  private choose<T extends { readonly w: Workload }>(
    c: ClusterState,
    p: EndpointPolicy,
    key: string | undefined,
    cands: readonly T[],
  ): T | undefined {
    if (cands.length <= 1) return cands[0];
    if (key !== undefined) {
      let best: T | undefined;
      let score = -1;
      for (const x of cands) {
        const s = fnv1a(`${key}\u0000${x.w.uid}`);
        if (s > score) {
          best = x;
          score = s;
        }
      }
      return best;
    }
    switch (p.simple) {
      case 'ROUND_ROBIN':
        return cands[c.next++ % cands.length];
      case 'RANDOM':
        return this.draw(cands);
      case 'LEAST_REQUEST': {
        const a = this.draw(cands);
        const b = this.draw(cands);
        const active = (x: T): number => c.endpoints.get(x.w.uid)?.active ?? 0;
        return active(b) < active(a) ? b : a;
      }
    }
  }

  /** A random endpoint, weighted by its capacity (as ztunnel weighs its own picks). */
  private draw<T extends { readonly w: Workload }>(cands: readonly T[]): T {
    const total = cands.reduce((sum, x) => sum + Math.max(0, x.w.capacity), 0);
    if (total <= 0) return cands[Math.floor(this.random() * cands.length)]!;
    let r = this.random() * total;
    for (const x of cands) {
      r -= Math.max(0, x.w.capacity);
      if (r < 0) return x;
    }
    return cands[cands.length - 1]!;
  }

  /** Counts an attempt's result against its endpoint, ejecting it when the policy says so. */
  private record(
    c: ClusterState,
    ep: EndpointState,
    od: NonNullable<EndpointPolicy['outlier']>,
    r: number | 'failure',
  ): void {
    const gateway = r === 'failure' || r === 502 || r === 503 || r === 504;
    const error = r === 'failure' || r >= 500;
    if (!error) {
      ep.fails5xx = 0;
      ep.failsGateway = 0;
      return;
    }
    ep.fails5xx++;
    if (gateway) ep.failsGateway++;
    else ep.failsGateway = 0;
    const now = this.now();
    if (ep.ejectedUntil > now) return;
    const tripped =
      (od.consecutive5xx > 0 && ep.fails5xx >= od.consecutive5xx) ||
      (od.consecutiveGateway > 0 && ep.failsGateway >= od.consecutiveGateway);
    if (!tripped) return;
    const out = [...c.endpoints.values()].filter((e) => e.ejectedUntil > now).length;
    // As Envoy (without always_eject_one_host): below 100 / max_ejection_percent endpoints, none is ejected.
    if (((out + 1) * 100) / Math.max(1, c.size) > od.maxEjectionPercent) return;
    // Each interval since the last ejection ended without another takes one off the multiplier.
    if (ep.ejectedUntil > 0 && od.intervalMs > 0)
      ep.ejections = Math.max(0, ep.ejections - Math.floor((now - ep.ejectedUntil) / od.intervalMs));
    ep.ejections++;
    ep.ejectedUntil = now + Math.min(od.baseEjectionMs * ep.ejections, Math.max(MAX_EJECTION_MS, od.baseEjectionMs));
    ep.fails5xx = 0;
    ep.failsGateway = 0;
  }
}
