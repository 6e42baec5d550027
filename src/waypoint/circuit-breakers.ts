/**
 * Envoy's circuit breakers for a backend (cluster), with the thresholds Istio sets from a DestinationRule's
 * `connectionPool` (`amesh.waypoint.v1.ConnectionPool`; 0: no limit), as Envoy's connection pools apply them:
 * - a request past `max_requests` requests in flight (waiting ones not counted) overflows at once;
 * - over HTTP/1.1, where a connection carries one request at a time, a request finding `max_connections` busy
 *   waits for one to free (first come, first served) while fewer than `max_pending_requests` wait, and overflows
 *   otherwise; over HTTP/2 the one connection per endpoint is never the limit;
 * - a retry past `max_retries` retries in flight is not made.
 * An overflowing request is answered by the caller with 503, response flag `UO`. The counts are this proxy's own.
 */
import type { ConnectionPool } from '../api/amesh/waypoint/v1/waypoint_pb.js';

export interface ConnectionLimits {
  readonly maxConnections: number;
  readonly maxPendingRequests: number;
  readonly maxRequests: number;
  readonly maxRetries: number;
  readonly maxRequestsPerConnection: number;
}

export const NO_LIMITS: ConnectionLimits = Object.freeze({
  maxConnections: 0,
  maxPendingRequests: 0,
  maxRequests: 0,
  maxRetries: 0,
  maxRequestsPerConnection: 0,
});

export function connectionLimitsFromXds(p: ConnectionPool | undefined): ConnectionLimits {
  if (p === undefined) return NO_LIMITS;
  return Object.freeze({
    maxConnections: p.maxConnections,
    maxPendingRequests: p.maxPendingRequests,
    maxRequests: p.maxRequests,
    maxRetries: p.maxRetries,
    maxRequestsPerConnection: p.maxRequestsPerConnection,
  });
}

/** A request let through: `release` when it is done (answered in full, failed, or given up by its client). */
export interface Admission {
  release(): void;
}

interface ClusterCounts {
  /** Requests in flight, and those of them over HTTP/1.1 (each holding a connection). */
  active: number;
  http1: number;
  retries: number;
  readonly waiting: (() => void)[];
}

const NOTHING_HELD: Admission = Object.freeze({ release: () => undefined });

export class CircuitBreakers {
  private readonly clusters = new Map<string, ClusterCounts>();

  /** A backend with nothing in flight is forgotten, so that backends no longer routed to leave no state behind. */
  private forgetIfIdle(cluster: string, c: ClusterCounts): void {
    if (
      c.active === 0 &&
      c.http1 === 0 &&
      c.retries === 0 &&
      c.waiting.length === 0 &&
      this.clusters.get(cluster) === c
    )
      this.clusters.delete(cluster);
  }

  private counts(cluster: string): ClusterCounts {
    let c = this.clusters.get(cluster);
    if (c === undefined) this.clusters.set(cluster, (c = { active: 0, http1: 0, retries: 0, waiting: [] }));
    return c;
  }

  /**
   * Admits a request to `cluster`: `start` runs once it may go (at once, or when a connection frees), and the
   * admission is returned; undefined: it overflows and `start` never runs.
   */
  admit(cluster: string, limits: ConnectionLimits, http2: boolean, start: () => void): Admission | undefined {
    if (limits === NO_LIMITS) {
      start();
      return NOTHING_HELD;
    }
    const c = this.counts(cluster);
    if (limits.maxRequests > 0 && c.active >= limits.maxRequests) return undefined;
    const connections = http2 ? 0 : limits.maxConnections;
    let state: 'waiting' | 'active' | 'released' = 'active';
    const go = (): void => {
      state = 'active';
      c.active++;
      if (!http2) c.http1++;
      start();
    };
    if (connections > 0 && c.http1 >= connections) {
      if (limits.maxPendingRequests > 0 && c.waiting.length >= limits.maxPendingRequests) return undefined;
      state = 'waiting';
      c.waiting.push(go);
    } else go();
    return {
      release: () => {
        if (state === 'released') return;
        if (state === 'waiting') {
          const i = c.waiting.indexOf(go);
          if (i >= 0) c.waiting.splice(i, 1);
        } else {
          c.active--;
          // A freed HTTP/1.1 connection goes to the first request waiting for one.
          if (!http2) {
            c.http1--;
            c.waiting.shift()?.();
          }
        }
        state = 'released';
        this.forgetIfIdle(cluster, c);
      },
    };
  }

  /** Whether a retry to `cluster` may be made; if so, `done` must be called once it has its outcome. */
  retry(cluster: string, limits: ConnectionLimits): { done(): void } | undefined {
    if (limits.maxRetries === 0) return { done: () => undefined };
    const c = this.counts(cluster);
    if (c.retries >= limits.maxRetries) return undefined;
    c.retries++;
    let done = false;
    return {
      done: () => {
        if (done) return;
        done = true;
        c.retries--;
        this.forgetIfIdle(cluster, c);
      },
    };
  }
}
