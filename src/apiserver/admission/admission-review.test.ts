import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findKind } from '../kinds.js';
import type { KindInfo } from '../kind-info.js';
import {
  InvalidReviewResponse,
  negotiateReviewVersion,
  parseReviewResponse,
  reviewRequest,
} from './admission-review.js';

const POLICIES = findKind('security.istio.io', 'v1', 'authorizationpolicies') as KindInfo;
const user = { username: 'alice', groups: ['system:authenticated'] };

test('the review version is the first listed one the server speaks', () => {
  assert.equal(negotiateReviewVersion(['v2', 'v1beta1', 'v1']), 'v1beta1');
  assert.equal(negotiateReviewVersion(['v1']), 'v1');
  assert.equal(negotiateReviewVersion(['v2']), undefined);
});

test('a request matched as equivalent carries the object at the rule version and the original as requestKind', () => {
  const { uid, body } = reviewRequest(
    {
      kind: POLICIES,
      version: 'v1beta1',
      subresource: undefined,
      operation: 'CREATE',
      namespace: 'ns',
      name: 'p',
      object: { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', metadata: { name: 'p' } },
      oldObject: undefined,
      dryRun: true,
      user,
    },
    'v1',
  );
  const r = (body as { request: Record<string, unknown> }).request;
  assert.equal(r.uid, uid);
  assert.deepEqual(r.kind, { group: 'security.istio.io', version: 'v1beta1', kind: 'AuthorizationPolicy' });
  assert.deepEqual(r.requestKind, { group: 'security.istio.io', version: 'v1', kind: 'AuthorizationPolicy' });
  assert.equal((r.object as { apiVersion: string }).apiVersion, 'security.istio.io/v1beta1');
  assert.equal(r.oldObject, null);
  assert.equal(r.dryRun, true);
  assert.deepEqual(r.options, { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions', dryRun: ['All'] });
});

test("a request at another served version names that version as requestKind and sends the stored object at the webhook's", () => {
  const gateways = findKind('networking.istio.io', 'v1alpha3', 'gateways') as KindInfo;
  const stored = { apiVersion: 'networking.istio.io/v1', kind: 'Gateway', metadata: { name: 'g' } };
  const request = (version: string): Record<string, unknown> =>
    (
      reviewRequest(
        {
          kind: gateways,
          version,
          subresource: undefined,
          operation: 'UPDATE',
          namespace: 'ns',
          name: 'g',
          object: stored,
          oldObject: stored,
          dryRun: false,
          user,
        },
        'v1',
      ).body as { request: Record<string, unknown> }
    ).request;
  const exact = request('v1alpha3');
  assert.deepEqual(exact.kind, { group: 'networking.istio.io', version: 'v1alpha3', kind: 'Gateway' });
  assert.deepEqual(exact.requestKind, exact.kind);
  assert.deepEqual(exact.requestResource, { group: 'networking.istio.io', version: 'v1alpha3', resource: 'gateways' });
  assert.equal((exact.object as { apiVersion: string }).apiVersion, 'networking.istio.io/v1alpha3');
  assert.equal((exact.oldObject as { apiVersion: string }).apiVersion, 'networking.istio.io/v1alpha3');
  // A webhook whose rule names the storage version gets the object as stored; the request's kind stays v1alpha3.
  const equivalent = request('v1');
  assert.deepEqual(equivalent.kind, { group: 'networking.istio.io', version: 'v1', kind: 'Gateway' });
  assert.deepEqual(equivalent.requestKind, exact.kind);
  assert.equal(equivalent.object, stored);
});

const v1 = (response: Record<string, unknown>): unknown => ({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  response,
});

test('a v1 answer must be a v1 AdmissionReview for the same uid', () => {
  assert.throws(
    () => parseReviewResponse({ ...(v1({ uid: 'u', allowed: true }) as object), kind: 'Other' }, 'u', 'v1', false),
    /expected webhook response of admission.k8s.io\/v1, Kind=AdmissionReview, got admission.k8s.io\/v1, Kind=Other/,
  );
  assert.throws(() => parseReviewResponse(v1({ uid: 'x', allowed: true }), 'u', 'v1', false), InvalidReviewResponse);
  assert.throws(
    () => parseReviewResponse({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }, 'u', 'v1', false),
    /absent/,
  );
  assert.equal(parseReviewResponse(v1({ uid: 'u', allowed: true }), 'u', 'v1', false).allowed, true);
});

test('patches: only from mutating webhooks, as JSONPatch; v1beta1 defaults the type', () => {
  const patch = Buffer.from('[]').toString('base64');
  assert.throws(
    () => parseReviewResponse(v1({ uid: 'u', allowed: true, patch, patchType: 'JSONPatch' }), 'u', 'v1', false),
    /may not return a patch/,
  );
  assert.throws(
    () => parseReviewResponse(v1({ uid: 'u', allowed: true, patch }), 'u', 'v1', true),
    /invalid patchType/,
  );
  const ok = parseReviewResponse(v1({ uid: 'u', allowed: true, patch, patchType: 'JSONPatch' }), 'u', 'v1', true);
  assert.equal(ok.patch?.toString(), '[]');
  const beta = parseReviewResponse({ response: { allowed: true, patch } }, 'u', 'v1beta1', true);
  assert.equal(beta.patch?.toString(), '[]');
});

test('a refusal keeps its Status and warnings', () => {
  const r = parseReviewResponse(
    v1({ uid: 'u', allowed: false, status: { code: 403, message: 'no' }, warnings: ['w', 3] }),
    'u',
    'v1',
    false,
  );
  assert.deepEqual(r.status, { code: 403, reason: undefined, message: 'no' });
  assert.deepEqual(r.warnings, ['w']);
});
