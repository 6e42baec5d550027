import { test } from 'node:test';
import assert from 'node:assert/strict';
import { multiError, validateAdmissionReview } from './config-validation.js';

const review = (request: Record<string, unknown>): string =>
  JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u1', ...request } });

const policy = (spec: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  uid: 'u1',
  kind: { group: 'security.istio.io', version: 'v1', kind: 'AuthorizationPolicy' },
  resource: { group: 'security.istio.io', version: 'v1', resource: 'authorizationpolicies' },
  operation: 'CREATE',
  namespace: 'shop',
  object: {
    apiVersion: 'security.istio.io/v1',
    kind: 'AuthorizationPolicy',
    metadata: { name: 'p', namespace: 'shop' },
    spec,
    ...extra,
  },
});

const response = (body: string): { uid: string; allowed: boolean; status?: { message: string }; warnings?: string[] } =>
  (validateAdmissionReview(body) as { response: never }).response;

test("Istio's multierror: one error as it is, several as a counted list", () => {
  assert.equal(multiError(['a']), 'a');
  assert.equal(multiError(['a', 'b']), '2 errors occurred:\n\t* a\n\t* b\n');
});

test('a policy istiod would refuse is refused with "configuration is invalid" and the field', () => {
  const r = response(review(policy({ action: 'DENYY' })));
  assert.equal(r.uid, 'u1');
  assert.equal(r.allowed, false);
  assert.match(r.status?.message ?? '', /^configuration is invalid: spec\.action: /);
});

test('a valid policy is allowed; values istiod skips come back as warnings', () => {
  assert.deepEqual(response(review(policy({ action: 'ALLOW' }))), { uid: 'u1', allowed: true });
  const r = response(review(policy({ rules: [{ to: [{ operation: { ports: ['8080', 'http'] } }] }] })));
  assert.equal(r.allowed, true);
  assert.match(r.warnings?.[0] ?? '', /ports/);
});

test('deletes are allowed unchecked, as upstream answers operations it does not validate', () => {
  assert.equal(response(review({ ...policy({ action: 'DENYY' }), operation: 'DELETE' })).allowed, true);
});

test('an unknown top-level field and a kind outside Istio are refused', () => {
  assert.match(
    response(review(policy({ action: 'ALLOW' }, { extra: 1 }))).status?.message ?? '',
    /^configuration is invalid: extra: unknown field "extra"/,
  );
  // A kind istiod does not read gets upstream's own check of the top-level fields.
  const sidecar = {
    ...policy({}, { extra: 1 }),
    kind: { group: 'networking.istio.io', version: 'v1', kind: 'Sidecar' },
    resource: { group: 'networking.istio.io', version: 'v1', resource: 'sidecars' },
  };
  assert.equal(response(review(sidecar)).status?.message, 'unknown field "extra" on Sidecar resource shop/p');
  const pod = { ...policy({}), kind: { group: '', version: 'v1', kind: 'Pod' } };
  assert.equal(response(review(pod)).status?.message, 'unrecognized type /v1, Kind=Pod');
});

test('Istio kinds amesh does not read are allowed', () => {
  const sidecar = {
    ...policy({ egress: 'not-a-list' }),
    kind: { group: 'networking.istio.io', version: 'v1', kind: 'Sidecar' },
    resource: { group: 'networking.istio.io', version: 'v1', resource: 'sidecars' },
  };
  assert.equal(response(review(sidecar)).allowed, true);
});

test('a DestinationRule is checked as istiod reads it for subsets', () => {
  const dr = {
    ...policy({ host: 'reviews', subsets: [{ name: 'v1', labels: 'version=v1' }] }),
    kind: { group: 'networking.istio.io', version: 'v1', kind: 'DestinationRule' },
    resource: { group: 'networking.istio.io', version: 'v1', resource: 'destinationrules' },
  };
  assert.match(response(review(dr)).status?.message ?? '', /^configuration is invalid: spec\.subsets\[0\]\.labels: /);
});

test("Istio's Gateway is checked as istiod reads it, not as the Gateway API's", () => {
  const gw = {
    ...policy({ servers: 'not-a-list' }),
    kind: { group: 'networking.istio.io', version: 'v1', kind: 'Gateway' },
    resource: { group: 'networking.istio.io', version: 'v1', resource: 'gateways' },
  };
  assert.match(response(review(gw)).status?.message ?? '', /^configuration is invalid: spec\.servers: /);
});

test('a body that is not JSON or has no request is refused, not crashed on', () => {
  assert.match(response('{').status?.message ?? '', /^could not decode body: /);
  assert.match(response('{}').status?.message ?? '', /^could not decode object: /);
});
