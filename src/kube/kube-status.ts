/**
 * The Kubernetes `Status` behind a failed client-node call, for deciding on `reason` and causes as client-go's
 * k8s.io/apimachinery pkg/api/errors helpers do (IsNotFound, IsAlreadyExists, IsForbidden, HasStatusCause), and
 * a one-line description for logs. client-node's ApiException keeps the response body as text and words its
 * message as several lines with headers, so the Status is parsed here.
 */
import { ApiException } from '@kubernetes/client-node';
import { isRecord } from '../lib/record.js';

export interface KubeStatus {
  readonly code: number;
  readonly reason: string;
  readonly message: string;
  readonly causes: readonly string[];
}

/** The Status of an API error, or undefined when `e` is not an answer from the API (a refused connection, a bug). */
export function kubeStatus(e: unknown): KubeStatus | undefined {
  if (!(e instanceof ApiException)) return undefined;
  let body: unknown = e.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      body = undefined;
    }
  }
  const s = isRecord(body) ? body : {};
  const details = isRecord(s['details']) ? s['details'] : {};
  const causes = Array.isArray(details['causes'])
    ? details['causes'].filter(isRecord).map((c) => (typeof c['reason'] === 'string' ? c['reason'] : ''))
    : [];
  return {
    code: e.code,
    reason: typeof s['reason'] === 'string' ? s['reason'] : '',
    message: typeof s['message'] === 'string' ? s['message'] : '',
    causes,
  };
}

/** One line for a log or an error message: the API's own words (code, reason, message), else the error's message. */
export function describeKubeError(e: unknown): string {
  const s = kubeStatus(e);
  if (s === undefined) return e instanceof Error ? e.message : String(e);
  return `${s.code}${s.reason === '' ? '' : ` ${s.reason}`}${s.message === '' ? '' : `: ${s.message}`}`;
}
