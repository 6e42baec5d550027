/**
 * The Kubernetes `Status` an API answers an error with, read from the response body, and its one-line description.
 * It loads no client: kube-status.ts reads it from client-node's errors, and the CNI plugin from its own GETs.
 */
import { isRecord } from '../lib/record.js';

export interface KubeStatus {
  readonly code: number;
  readonly reason: string;
  readonly message: string;
  readonly causes: readonly string[];
}

/** The Status in an error answer's `body` (JSON text or already parsed); empty fields when it is not one. */
export function parseStatus(code: number, body: unknown): KubeStatus {
  let parsed = body;
  if (typeof parsed === 'string') {
    try {
      parsed = JSON.parse(parsed);
    } catch {
      parsed = undefined;
    }
  }
  const s = isRecord(parsed) ? parsed : {};
  const details = isRecord(s['details']) ? s['details'] : {};
  const causes = Array.isArray(details['causes'])
    ? details['causes'].filter(isRecord).map((c) => (typeof c['reason'] === 'string' ? c['reason'] : ''))
    : [];
  return {
    code,
    reason: typeof s['reason'] === 'string' ? s['reason'] : '',
    message: typeof s['message'] === 'string' ? s['message'] : '',
    causes,
  };
}

/** `code reason: message`, the API's own words, for a log or an error message. */
export function describeStatus(s: KubeStatus): string {
  return `${s.code}${s.reason === '' ? '' : ` ${s.reason}`}${s.message === '' ? '' : `: ${s.message}`}`;
}
