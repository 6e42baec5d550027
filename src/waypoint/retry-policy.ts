/**
 * When the waypoint tries a request again, as Envoy's router does for the retry policy Istio gives a route
 * (istio `pilot/pkg/networking/core/route/retry/retry.go`; Envoy's `x-envoy-retry-on` conditions):
 * - `connect-failure`: the connection to the endpoint could not be made;
 * - `refused-stream`: an HTTP/2 upstream refused the stream (REFUSED_STREAM);
 * - `reset`: no response came (the connection failed, was reset, or the attempt's time ran out);
 * - `5xx`: a 5xx status, or no response; `gateway-error`: 502, 503 or 504, or no response;
 * - `retriable-4xx`: 409; `retriable-status-codes`: the route's listed statuses;
 * - gRPC's `cancelled`, `deadline-exceeded`, `internal`, `resource-exhausted` and `unavailable`: that grpc-status
 *   in the response's headers (a trailers-only answer).
 * A route without a policy gets Istio's default: 2 more attempts on connect-failure, refused-stream, unavailable,
 * cancelled and retriable-status-codes (with no statuses listed). Each retry waits Envoy's default back-off: a
 * random time below 25 ms × (2^n − 1), at most 250 ms.
 */
import { durationMs } from '@bufbuild/protobuf/wkt';
import type { RetryPolicy as XdsRetryPolicy } from '../api/amesh/waypoint/v1/waypoint_pb.js';

export interface RetryPolicy {
  /** Attempts after the first. */
  readonly attempts: number;
  readonly retryOn: ReadonlySet<string>;
  readonly statusCodes: ReadonlySet<number>;
  /** Each attempt's limit up to the response's headers; undefined: none. */
  readonly perTryTimeoutMs: number | undefined;
}

/** What came of one attempt. */
export type AttemptOutcome =
  | { readonly t: 'connect-failure' }
  | { readonly t: 'reset'; readonly refusedStream: boolean }
  | { readonly t: 'per-try-timeout' }
  | { readonly t: 'response'; readonly status: number; readonly grpcStatus: string | undefined };

const ISTIO_DEFAULT_RETRY_ON = [
  'connect-failure',
  'refused-stream',
  'unavailable',
  'cancelled',
  'retriable-status-codes',
];

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  attempts: 2,
  retryOn: new Set(ISTIO_DEFAULT_RETRY_ON),
  statusCodes: new Set<number>(),
  perTryTimeoutMs: undefined,
});

/** A route's policy from istiod's: unset, Istio's default; conditions unset, Istio's default ones. */
export function retryPolicyFromXds(p: XdsRetryPolicy | undefined): RetryPolicy {
  if (p === undefined) return DEFAULT_RETRY_POLICY;
  return Object.freeze({
    attempts: p.attempts,
    retryOn: new Set(p.retryOn.length === 0 ? ISTIO_DEFAULT_RETRY_ON : p.retryOn),
    statusCodes: new Set(p.retriableStatusCodes),
    perTryTimeoutMs: p.perTryTimeout === undefined ? undefined : durationMs(p.perTryTimeout),
  });
}

/** The gRPC status codes Envoy's gRPC retry conditions name. */
const GRPC_CONDITIONS: Readonly<Record<string, string>> = {
  '1': 'cancelled',
  '4': 'deadline-exceeded',
  '8': 'resource-exhausted',
  '13': 'internal',
  '14': 'unavailable',
};

/** Whether `policy` retries after `outcome` (attempts left are the caller's to count). */
export function retriable(policy: RetryPolicy, outcome: AttemptOutcome): boolean {
  const on = policy.retryOn;
  const noResponse = on.has('5xx') || on.has('gateway-error') || on.has('reset');
  switch (outcome.t) {
    case 'connect-failure':
      return noResponse || on.has('connect-failure');
    case 'reset':
      return noResponse || (outcome.refusedStream && on.has('refused-stream'));
    case 'per-try-timeout':
      return noResponse;
    case 'response': {
      const s = outcome.status;
      if (on.has('5xx') && s >= 500 && s <= 599) return true;
      if (on.has('gateway-error') && (s === 502 || s === 503 || s === 504)) return true;
      if (on.has('retriable-4xx') && s === 409) return true;
      if (on.has('retriable-status-codes') && policy.statusCodes.has(s)) return true;
      const grpc = outcome.grpcStatus === undefined ? undefined : GRPC_CONDITIONS[outcome.grpcStatus];
      return grpc !== undefined && on.has(grpc);
    }
  }
}

/** How long to wait before retry `n` (1 for the first), drawn with `random`. */
export function backoffMs(n: number, random: () => number = Math.random): number {
  const base = 25;
  return Math.floor(random() * Math.min((2 ** n - 1) * base, 10 * base));
}
