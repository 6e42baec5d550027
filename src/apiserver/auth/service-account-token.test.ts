import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt, decodeProtectedHeader, importSPKI, jwtVerify } from 'jose';
import { AuthFixture } from '../../../test/helpers/auth-fixture.js';
import { ApiError } from '../api-error.js';
import { DEFAULT_ISSUER } from './service-account-token.js';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const rejectsWith = async (p: Promise<unknown>, reason: string, code: number, message: RegExp): Promise<void> => {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof ApiError, String(e));
    assert.equal(e.reason, reason);
    assert.equal(e.code, code);
    assert.match(e.message, message);
    return true;
  });
};

test("TokenRequest signs a JWT with exactly Kubernetes' claims: iss, sub, aud defaulting to the issuer, exp 3600s after iat and nbf, jti, kubernetes.io", async (t) => {
  const f = await AuthFixture.create(t);
  const sa = f.put('serviceaccounts', 'istio-system', 'ztunnel');
  const tr = await f.issuer.createToken('istio-system', 'ztunnel', {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    metadata: { creationTimestamp: null },
    spec: {},
  });
  const status = tr['status'] as { token: string; expirationTimestamp: string };
  const header = decodeProtectedHeader(status.token);
  assert.deepEqual(header, { alg: 'ES256', kid: f.creds.serviceAccountKey.keyId });
  // The signature verifies with sa.pub, the public key an OIDC JWKS or `--service-account-key-file` would publish.
  const { payload } = await jwtVerify(status.token, await importSPKI(f.creds.serviceAccountKey.publicKeyPem, 'ES256'));
  assert.deepEqual(Object.keys(payload), ['aud', 'exp', 'iat', 'iss', 'jti', 'kubernetes.io', 'nbf', 'sub']);
  assert.equal(payload.iss, DEFAULT_ISSUER);
  assert.equal(payload.sub, 'system:serviceaccount:istio-system:ztunnel');
  assert.deepEqual(payload.aud, [DEFAULT_ISSUER]);
  assert.equal(payload.exp! - payload.iat!, 3600);
  assert.equal(payload.nbf, payload.iat);
  assert.match(payload.jti!, UUID_RE);
  assert.deepEqual(payload['kubernetes.io'], {
    namespace: 'istio-system',
    serviceaccount: { name: 'ztunnel', uid: sa.metadata.uid },
  });
  assert.deepEqual(tr['spec'], { audiences: [DEFAULT_ISSUER], expirationSeconds: 3600 });
  assert.equal(tr.metadata.name, 'ztunnel');
  assert.equal(tr.metadata.namespace, 'istio-system');
  assert.equal(status.expirationTimestamp, new Date(payload.exp! * 1000).toISOString().replace('.000Z', 'Z'));
  assert.match(String(tr.metadata.creationTimestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
});

test('a token bound to a pod carries the pod and, from its spec.nodeName, the node, each with its uid', async (t) => {
  const f = await AuthFixture.create(t);
  const sa = f.put('serviceaccounts', 'default', 'web');
  const pod = f.put('pods', 'default', 'web-1', { spec: { serviceAccountName: 'web', nodeName: 'node-a' } });
  const node = f.put('nodes', '', 'node-a');
  const token = await f.token('default', 'web', {
    audiences: ['istio-ca'],
    expirationSeconds: 43200,
    boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web-1', uid: pod.metadata.uid },
  });
  const c = decodeJwt(token);
  assert.deepEqual(c.aud, ['istio-ca']);
  assert.equal(c.exp! - c.iat!, 43200);
  assert.deepEqual(c['kubernetes.io'], {
    namespace: 'default',
    node: { name: 'node-a', uid: node.metadata.uid },
    pod: { name: 'web-1', uid: pod.metadata.uid },
    serviceaccount: { name: 'web', uid: sa.metadata.uid },
  });
});

test('a pod whose node is missing still gets a token, without the node claim, as kube-apiserver issues it', async (t) => {
  const f = await AuthFixture.create(t);
  f.put('serviceaccounts', 'default', 'web');
  f.put('pods', 'default', 'web-1', { spec: { serviceAccountName: 'web', nodeName: 'gone' } });
  const c = decodeJwt(
    await f.token('default', 'web', { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web-1' } }),
  );
  assert.deepEqual(Object.keys(c['kubernetes.io'] as object), ['namespace', 'pod', 'serviceaccount']);
});

test('expirationSeconds under 10 minutes is 422 Invalid at spec.expirationSeconds, worded as Kubernetes; 600 is accepted', async (t) => {
  const f = await AuthFixture.create(t);
  f.put('serviceaccounts', 'default', 'web');
  await assert.rejects(f.token('default', 'web', { expirationSeconds: 599 }), (e: unknown) => {
    assert.ok(e instanceof ApiError);
    assert.equal(e.code, 422);
    assert.equal(
      e.message,
      'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes',
    );
    assert.equal(e.details?.causes?.[0]?.field, 'spec.expirationSeconds');
    return true;
  });
  await rejectsWith(
    f.token('default', 'web', { expirationSeconds: 2 ** 32 + 1 }),
    'Invalid',
    422,
    /larger than 2\^32 seconds/,
  );
  const c = decodeJwt(await f.token('default', 'web', { expirationSeconds: 600 }));
  assert.equal(c.exp! - c.iat!, 600);
});

test("TokenRequest errors are the API server's: missing service account 404, pod of another account 400, stale bound uid 409, unsupported kind 400, name mismatch 422", async (t) => {
  const f = await AuthFixture.create(t);
  await rejectsWith(f.token('default', 'nobody'), 'NotFound', 404, /^serviceaccounts "nobody" not found$/);
  f.put('serviceaccounts', 'default', 'web');
  f.put('pods', 'default', 'other', { spec: { serviceAccountName: 'admin' } });
  await rejectsWith(
    f.token('default', 'web', { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'other' } }),
    'BadRequest',
    400,
    /cannot bind token for serviceaccount "web" to pod running with different serviceaccount name/,
  );
  await rejectsWith(
    f.token('default', 'web', { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'missing' } }),
    'NotFound',
    404,
    /^pods "missing" not found$/,
  );
  f.put('pods', 'default', 'web-1', { spec: { serviceAccountName: 'web' } });
  await rejectsWith(
    f.token('default', 'web', { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web-1', uid: 'old-uid' } }),
    'Conflict',
    409,
    /the UID in the bound object reference \(old-uid\) does not match the UID in record/,
  );
  await rejectsWith(
    f.token('default', 'web', { boundObjectRef: { kind: 'ConfigMap', apiVersion: 'v1', name: 'x' } }),
    'BadRequest',
    400,
    /cannot bind token to object of type \/v1, Kind=ConfigMap/,
  );
  await rejectsWith(
    f.issuer.createToken('default', 'web', { metadata: { name: 'other' } }),
    'Invalid',
    422,
    /metadata\.name: Invalid value: "other": must match the service account name if specified/,
  );
  await rejectsWith(
    f.issuer.createToken('default', 'web', { spec: { audiences: 'istio-ca' } }),
    'BadRequest',
    400,
    /spec\.audiences is not a list of strings/,
  );
});

test('tokens can be bound to a secret or a node, as Kubernetes allows', async (t) => {
  const f = await AuthFixture.create(t);
  f.put('serviceaccounts', 'default', 'web');
  const secret = f.put('secrets', 'default', 's');
  const node = f.put('nodes', '', 'node-a');
  assert.deepEqual(
    (
      decodeJwt(await f.token('default', 'web', { boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: 's' } }))[
        'kubernetes.io'
      ] as { secret: unknown }
    ).secret,
    { name: 's', uid: secret.metadata.uid },
  );
  assert.deepEqual(
    (
      decodeJwt(
        await f.token('default', 'web', { boundObjectRef: { kind: 'Node', apiVersion: 'v1', name: 'node-a' } }),
      )['kubernetes.io'] as { node: unknown }
    ).node,
    { name: 'node-a', uid: node.metadata.uid },
  );
});
