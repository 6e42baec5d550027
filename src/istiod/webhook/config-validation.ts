/**
 * istiod's answer to an AdmissionReview for an Istio object, as istio `pkg/webhooks/validation/server/server.go`
 * answers: only CREATE and UPDATE are checked (anything else is allowed); an object with the
 * `internal.istio.io/webhook-always-reject` annotation is refused (istiod's own probe that the webhook is live,
 * `pkg/config/validation/validation.go`); a kind istiod reads is checked exactly as istiod checks it when its
 * informer delivers it (`registry/kube-source.ts` `checkApiObject`), and refused with `configuration is invalid:`
 * and the errors (one as it is, several in Istio's multierror list); a top-level field other than apiVersion, kind,
 * metadata, spec and status is refused; values istiod would skip come back as warnings. Istio kinds amesh does not
 * read are allowed; a kind outside Istio's groups is an unrecognized type. The review's apiVersion and uid are
 * echoed back.
 */
import { isRecord } from '../../lib/record.js';
import { checkApiObject, WATCHED_KINDS } from '../registry/kube-source.js';

/** constants.AlwaysReject (istio pkg/config/constants/constants.go). */
export const ALWAYS_REJECT_ANNOTATION = 'internal.istio.io/webhook-always-reject';
const VALID_FIELDS = new Set(['apiVersion', 'kind', 'metadata', 'spec', 'status']);
const ISTIO_GROUP = /(^|\.)istio\.io$/;

interface Answer {
  readonly allowed: boolean;
  readonly message?: string;
  readonly warnings?: readonly string[];
}

/** Istio's multierror format (pkg/util/istiomultierror): one error as it is, several as a bulleted count. */
export function multiError(errors: readonly string[]): string {
  if (errors.length === 1) return errors[0] ?? '';
  return `${String(errors.length)} errors occurred:\n\t${errors.map((e) => `* ${e}`).join('\n\t')}\n`;
}

function judge(request: Record<string, unknown>): Answer {
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return { allowed: true };
  const object = request.object;
  if (!isRecord(object)) return { allowed: false, message: 'cannot decode configuration: no object in the request' };
  const gvk = isRecord(request.kind) ? request.kind : {};
  const group = typeof gvk.group === 'string' ? gvk.group : '';
  const kind = typeof gvk.kind === 'string' ? gvk.kind : '';
  if (!ISTIO_GROUP.test(group))
    return { allowed: false, message: `unrecognized type ${group}/${String(gvk.version)}, Kind=${kind}` };
  const meta = isRecord(object.metadata) ? object.metadata : {};
  const annotations = isRecord(meta.annotations) ? meta.annotations : {};
  if (ALWAYS_REJECT_ANNOTATION in annotations)
    return {
      allowed: false,
      message: `configuration is invalid: "${ALWAYS_REJECT_ANNOTATION}" annotation found, rejecting`,
    };
  let warnings: readonly string[] = [];
  // By group and resource: istiod reads Istio's Gateway as its own kind, beside the Gateway API's.
  const resource =
    isRecord(request.resource) && typeof request.resource.resource === 'string' ? request.resource.resource : '';
  const watched = WATCHED_KINDS.find((w) => w.apiVersion.startsWith(`${group}/`) && w.path.endsWith(`/${resource}`));
  if (watched !== undefined) {
    const checked = checkApiObject(watched, object);
    // The errors name the object (`AuthorizationPolicy ns/name: spec.action: …`); the request already does.
    const named = `${watched.kind} ${typeof meta.namespace === 'string' ? `${meta.namespace}/` : ''}${String(meta.name)}: `;
    const strip = (e: string): string => (e.startsWith(named) ? e.slice(named.length) : e);
    if (checked.errors.length > 0)
      return { allowed: false, message: `configuration is invalid: ${multiError(checked.errors.map(strip))}` };
    warnings = checked.warnings.map(strip);
  }
  const unknown = Object.keys(object).find((k) => !VALID_FIELDS.has(k));
  if (unknown !== undefined)
    return {
      allowed: false,
      message: `unknown field "${unknown}" on ${kind} resource ${typeof request.namespace === 'string' ? request.namespace : ''}/${String(meta.name)}`,
    };
  return { allowed: true, ...(warnings.length > 0 ? { warnings } : {}) };
}

/** The AdmissionReview answering the review in `body` (whatever was sent: a body that is no review gets a refusal). */
export function validateAdmissionReview(body: string): Record<string, unknown> {
  let review: unknown;
  let answer: Answer | undefined;
  try {
    review = JSON.parse(body);
  } catch (e) {
    answer = { allowed: false, message: `could not decode body: ${(e as Error).message}` };
  }
  const r = isRecord(review) ? review : {};
  const request = isRecord(r.request) ? r.request : undefined;
  answer ??=
    request === undefined
      ? { allowed: false, message: 'could not decode object: the review has no request' }
      : judge(request);
  return {
    apiVersion: typeof r.apiVersion === 'string' ? r.apiVersion : 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: {
      uid: request?.uid ?? '',
      allowed: answer.allowed,
      ...(answer.message !== undefined ? { status: { message: answer.message } } : {}),
      ...(answer.warnings !== undefined ? { warnings: answer.warnings } : {}),
    },
  };
}
