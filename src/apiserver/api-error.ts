import type { KubeObject } from './kube-object.js';

/**
 * Kubernetes' StatusReason values (k8s.io/apimachinery pkg/apis/meta/v1 types.go) with the HTTP code each is
 * served with. These are the API server's stable error codes: clients (kubectl, client-go, client-node,
 * python's kubernetes) branch on `reason` and `code`, so they are documented in docs/errors.md as they are.
 */
export const STATUS_REASONS = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  AlreadyExists: 409,
  Conflict: 409,
  Gone: 410,
  Expired: 410,
  RequestEntityTooLarge: 413,
  UnsupportedMediaType: 415,
  Invalid: 422,
  TooManyRequests: 429,
  InternalError: 500,
  ServiceUnavailable: 503,
  Timeout: 504,
} as const;

export type StatusReason = keyof typeof STATUS_REASONS;

/** One entry of `details.causes`: for `Invalid`, `field` is the path (`metadata.name`, `spec.ports[0].port`). */
export interface StatusCause {
  reason: string;
  message: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** An API request that failed; the HTTP layer serves it as a `Status` object with `code` and `reason`. */
export class ApiError extends Error {
  readonly reason: StatusReason;
  readonly code: number;
  readonly details: StatusDetails | undefined;
  constructor(reason: StatusReason, message: string, details?: StatusDetails) {
    super(message);
    this.name = 'ApiError';
    this.reason = reason;
    this.code = STATUS_REASONS[reason];
    this.details = details;
  }

  /** The `Status` object (meta/v1) the API serves for this error. */
  toStatus(): KubeObject {
    return {
      apiVersion: 'v1',
      kind: 'Status',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details !== undefined ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

/**
 * `422 Invalid` for `kind` `name` with one cause per field error, worded as apimachinery's NewInvalid words it:
 * one error as it is, several (duplicates dropped) as `[a, b]`, the way an aggregate error prints.
 */
export function invalid(kind: string, group: string, name: string, causes: StatusCause[]): ApiError {
  const messages = [...new Set(causes.map((c) => (c.field !== undefined ? `${c.field}: ${c.message}` : c.message)))];
  const list = messages.length === 1 ? (messages[0] ?? '') : `[${messages.join(', ')}]`;
  return new ApiError('Invalid', `${kind}${group === '' ? '' : '.' + group} "${name}" is invalid: ${list}`, {
    name,
    group,
    kind,
    causes,
  });
}
