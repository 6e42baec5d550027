/**
 * The Kubernetes `Status` behind a failed client-node call, for deciding on `reason` and causes as client-go's
 * k8s.io/apimachinery pkg/api/errors helpers do (IsNotFound, IsAlreadyExists, IsForbidden, HasStatusCause), and
 * a one-line description for logs. client-node's ApiException keeps the response body as text and words its
 * message as several lines with headers, so the Status is read from its body (api-status.ts).
 */
import { ApiException } from '@kubernetes/client-node';
import { describeStatus, parseStatus, type KubeStatus } from './api-status.js';

export type { KubeStatus } from './api-status.js';

/** The Status of an API error, or undefined when `e` is not an answer from the API (a refused connection, a bug). */
export function kubeStatus(e: unknown): KubeStatus | undefined {
  return e instanceof ApiException ? parseStatus(e.code, e.body) : undefined;
}

/** One line for a log or an error message: the API's own words (code, reason, message), else the error's message. */
export function describeKubeError(e: unknown): string {
  const s = kubeStatus(e);
  if (s === undefined) return e instanceof Error ? e.message : String(e);
  return describeStatus(s);
}

/** For `.catch` after a create: an object that already exists (409) is as good as created; anything else rethrows. */
export function ignoreConflict(e: unknown): void {
  if ((e as { code?: number }).code !== 409) throw e;
}
