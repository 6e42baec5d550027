/**
 * The AdmissionReview a webhook is sent and what its answer may be, after k8s.io/apiserver
 * `pkg/admission/plugin/webhook/request/admissionreview.go`: the request at the first version the webhook lists
 * that this server speaks (`admission.k8s.io/v1`, else `v1beta1`), and the checks on the answer. A v1 answer must be
 * a v1 AdmissionReview with the request's uid, and a patch must say `patchType: JSONPatch`; a v1beta1 answer is
 * taken more loosely, as kube-apiserver takes it (its patch type defaults to JSONPatch).
 */
import { randomUUID } from 'node:crypto';
import type { UserInfo } from '../auth/user-info.js';
import type { KubeObject } from '../kube-object.js';
import { asArray, asObject, asString } from '../validation/json-fields.js';
import type { AdmissionOperation } from './webhook-rules.js';
import type { KindInfo } from '../kind-info.js';

const REVIEW_VERSIONS = ['v1', 'v1beta1'] as const;
type ReviewVersion = (typeof REVIEW_VERSIONS)[number];

const OPTIONS_KIND: Readonly<Record<AdmissionOperation, string>> = {
  CREATE: 'CreateOptions',
  UPDATE: 'UpdateOptions',
  DELETE: 'DeleteOptions',
};

/** The write under admission: what is written, where, and how. */
export interface AdmissionSubject {
  readonly kind: KindInfo;
  readonly subresource: string | undefined;
  readonly operation: AdmissionOperation;
  readonly namespace: string | undefined;
  readonly name: string;
  readonly object: KubeObject | undefined;
  readonly oldObject: KubeObject | undefined;
  readonly dryRun: boolean;
}

/** One request as a webhook sees it. */
export interface ReviewRequest extends AdmissionSubject {
  /** The version the webhook's rules matched (the kind's own unless matched as equivalent). */
  readonly version: string;
  readonly user: UserInfo;
}

/** A webhook's answer: allowed (with an optional JSONPatch), or refused with its Status. */
export interface ReviewResponse {
  readonly allowed: boolean;
  readonly status: { readonly code?: number; readonly reason?: string; readonly message?: string } | undefined;
  readonly patch: Buffer | undefined;
  readonly warnings: readonly string[];
}

/** An answer that breaks the protocol; the dispatcher reports it as a failed call. */
export class InvalidReviewResponse extends Error {}

/** The review version to send, from the webhook's `admissionReviewVersions`, or undefined when none is spoken. */
export function negotiateReviewVersion(listed: unknown): ReviewVersion | undefined {
  return (asArray(listed) ?? []).find((v): v is ReviewVersion => (REVIEW_VERSIONS as readonly unknown[]).includes(v));
}

/**
 * The object as the webhook's version names it: only `apiVersion` differs between the versions of a kind here (the
 * store keeps objects at the storage version, which may be neither the request's nor the webhook's).
 */
function atVersion(o: KubeObject | undefined, k: KindInfo, version: string): KubeObject | null {
  if (o === undefined) return null;
  const apiVersion = k.group === '' ? version : `${k.group}/${version}`;
  return o.apiVersion === apiVersion ? o : { ...o, apiVersion };
}

export function reviewRequest(r: ReviewRequest, reviewVersion: ReviewVersion): { uid: string; body: object } {
  const k = r.kind;
  const uid = randomUUID();
  const resource = { group: k.group, version: r.version, resource: k.plural };
  const kind = { group: k.group, version: r.version, kind: k.kind };
  const sub = r.subresource !== undefined ? { subResource: r.subresource, requestSubResource: r.subresource } : {};
  return {
    uid,
    body: {
      apiVersion: `admission.k8s.io/${reviewVersion}`,
      kind: 'AdmissionReview',
      request: {
        uid,
        kind,
        resource,
        ...sub,
        requestKind: { group: k.group, version: k.version, kind: k.kind },
        requestResource: { group: k.group, version: k.version, resource: k.plural },
        name: r.name,
        ...(r.namespace !== undefined ? { namespace: r.namespace } : {}),
        operation: r.operation,
        userInfo: r.user,
        object: atVersion(r.object, k, r.version),
        oldObject: atVersion(r.oldObject, k, r.version),
        dryRun: r.dryRun,
        options: {
          apiVersion: 'meta.k8s.io/v1',
          kind: OPTIONS_KIND[r.operation],
          ...(r.dryRun ? { dryRun: ['All'] } : {}),
        },
      },
    },
  };
}

/** The answer in `body` to the review `uid` sent at `reviewVersion`; throws InvalidReviewResponse when malformed. */
export function parseReviewResponse(
  body: unknown,
  uid: string,
  reviewVersion: ReviewVersion,
  mutating: boolean,
): ReviewResponse {
  const review = asObject(body);
  const apiVersion = `admission.k8s.io/${reviewVersion}`;
  if (reviewVersion === 'v1' && (review?.apiVersion !== apiVersion || review.kind !== 'AdmissionReview'))
    throw new InvalidReviewResponse(
      `expected webhook response of ${apiVersion}, Kind=AdmissionReview, got ${asString(review?.apiVersion) ?? ''}, Kind=${asString(review?.kind) ?? ''}`,
    );
  const response = asObject(review?.response);
  if (response === undefined) throw new InvalidReviewResponse('webhook response was absent');
  if (reviewVersion === 'v1' && response.uid !== uid)
    throw new InvalidReviewResponse(`expected response.uid="${uid}", got "${asString(response.uid) ?? ''}"`);
  const patchText = asString(response.patch);
  const patchType = asString(response.patchType) ?? (reviewVersion === 'v1beta1' ? 'JSONPatch' : undefined);
  let patch: Buffer | undefined;
  if (patchText !== undefined && patchText !== '') {
    if (!mutating) throw new InvalidReviewResponse('validating webhook may not return a patch');
    if (patchType !== 'JSONPatch')
      throw new InvalidReviewResponse(`webhook returned invalid patchType: "${patchType ?? ''}"`);
    patch = Buffer.from(patchText, 'base64');
  } else if (reviewVersion === 'v1' && response.patchType !== undefined && response.patchType !== null)
    throw new InvalidReviewResponse('webhook returned patchType without a patch');
  const status = asObject(response.status);
  return {
    allowed: response.allowed === true,
    status:
      status === undefined
        ? undefined
        : {
            code: typeof status.code === 'number' ? status.code : undefined,
            reason: asString(status.reason),
            message: asString(status.message),
          },
    patch,
    warnings: (asArray(response.warnings) ?? []).filter((w): w is string => typeof w === 'string'),
  };
}
