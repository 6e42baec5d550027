import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT, generateKeyPair } from 'jose';
import { AuthFixture } from '../../../test/helpers/auth-fixture.js';
import { ApiError } from '../api-error.js';
import type { KubeObject } from '../kube-object.js';
import { DEFAULT_ISSUER } from './service-account-token.js';
import { reviewToken } from './token-review.js';

const review = async (f: AuthFixture, token: string, audiences?: string[]): Promise<Record<string, unknown>> => {
  const body: KubeObject = {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenReview',
    metadata: {},
    spec: { token, ...(audiences !== undefined ? { audiences } : {}) },
  };
  return (await reviewToken(f.authenticator, body))['status'] as Record<string, unknown>;
};
const refusedWith = async (f: AuthFixture, token: string, error: string, audiences?: string[]): Promise<void> => {
  assert.deepEqual(await review(f, token, audiences), { user: {}, error });
};

/** istio-system/ztunnel with a pod on node-a, and a pod-bound token for the CA audience. */
async function boundToken(
  f: AuthFixture,
): Promise<{ token: string; sa: KubeObject; pod: KubeObject; node: KubeObject }> {
  const sa = f.put('serviceaccounts', 'istio-system', 'ztunnel');
  const pod = f.put('pods', 'istio-system', 'ztunnel-x', {
    spec: { serviceAccountName: 'ztunnel', nodeName: 'node-a' },
  });
  const node = f.put('nodes', '', 'node-a');
  const token = await f.token('istio-system', 'ztunnel', {
    audiences: ['istio-ca'],
    boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'ztunnel-x', uid: pod.metadata.uid },
  });
  return { token, sa, pod, node };
}

test('a valid pod-bound token is authenticated with the service-account user, its groups and the pod and node in extra', async (t) => {
  const f = await AuthFixture.create(t);
  const { token, sa, pod, node } = await boundToken(f);
  const status = await review(f, token, ['istio-ca']);
  const jti = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { jti: string };
  assert.deepEqual(status, {
    authenticated: true,
    user: {
      username: 'system:serviceaccount:istio-system:ztunnel',
      uid: sa.metadata.uid,
      groups: ['system:serviceaccounts', 'system:serviceaccounts:istio-system', 'system:authenticated'],
      extra: {
        'authentication.kubernetes.io/pod-name': ['ztunnel-x'],
        'authentication.kubernetes.io/pod-uid': [pod.metadata.uid],
        'authentication.kubernetes.io/credential-id': [`JTI=${jti.jti}`],
        'authentication.kubernetes.io/node-name': ['node-a'],
        'authentication.kubernetes.io/node-uid': [node.metadata.uid],
      },
    },
    audiences: ['istio-ca'],
  });
});

test("status.audiences is the intersection of spec.audiences with the token's", async (t) => {
  const f = await AuthFixture.create(t);
  f.put('serviceaccounts', 'default', 'web');
  const token = await f.token('default', 'web', { audiences: ['a', 'b'] });
  assert.deepEqual((await review(f, token, ['b', 'c']))['audiences'], ['b']);
});

test("an expired token fails TokenReview with Kubernetes' error", async (t) => {
  const f = await AuthFixture.create(t);
  f.put('serviceaccounts', 'default', 'web');
  const token = await f.expiredToken('default', 'web');
  await refusedWith(f, token, '[invalid bearer token, service account token has expired]');
});

test("an expired token is still accepted within go-jose's one-minute leeway, and refused after it", async (t) => {
  const f = await AuthFixture.create(t);
  f.put('serviceaccounts', 'default', 'web');
  const token = await f.token('default', 'web', { expirationSeconds: 600 });
  f.clockOffsetMs = 630_000;
  assert.equal((await review(f, token))['authenticated'], true);
  f.clockOffsetMs = 662_000;
  await refusedWith(f, token, '[invalid bearer token, service account token has expired]');
});

test('a token for another audience fails TokenReview, naming both audience lists as Kubernetes does', async (t) => {
  const f = await AuthFixture.create(t);
  f.put('serviceaccounts', 'default', 'web');
  const token = await f.token('default', 'web', { audiences: ['istio-ca'] });
  await refusedWith(
    f,
    token,
    `[invalid bearer token, token audiences ["istio-ca"] is invalid for the target audiences ["${DEFAULT_ISSUER}"]]`,
  );
  await refusedWith(
    f,
    token,
    '[invalid bearer token, token audiences ["istio-ca"] is invalid for the target audiences ["vault"]]',
    ['vault'],
  );
});

test('a token whose signature was tampered with fails TokenReview', async (t) => {
  const f = await AuthFixture.create(t);
  f.put('serviceaccounts', 'default', 'web');
  const [h, p, s] = (await f.token('default', 'web')).split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
  const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'system:serviceaccount:istio-system:istiod' })).toString('base64url')}.${s}`;
  await refusedWith(f, forged, '[invalid bearer token, go-jose/go-jose: error in cryptographic primitive]');
  const flipped = `${h}.${p}.${s.slice(0, 10)}${s[10] === 'A' ? 'B' : 'A'}${s.slice(11)}`;
  await refusedWith(f, flipped, '[invalid bearer token, go-jose/go-jose: error in cryptographic primitive]');
});

test('a token signed by another key under our issuer, or from another issuer, or not a JWT, is not authenticated', async (t) => {
  const f = await AuthFixture.create(t);
  f.put('serviceaccounts', 'default', 'web');
  const { privateKey } = await generateKeyPair('ES256');
  const mint = (iss: string): Promise<string> =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer(iss)
      .setSubject('system:serviceaccount:default:web')
      .setAudience(DEFAULT_ISSUER)
      .setExpirationTime('1h')
      .sign(privateKey);
  await refusedWith(
    f,
    await mint(DEFAULT_ISSUER),
    '[invalid bearer token, go-jose/go-jose: error in cryptographic primitive]',
  );
  await refusedWith(f, await mint('https://evil.example'), 'invalid bearer token');
  await refusedWith(f, 'not-a-token', 'invalid bearer token');
});

test('a token bound to a deleted pod fails TokenReview; so does one whose pod was recreated with a new uid', async (t) => {
  const f = await AuthFixture.create(t);
  const { token, pod } = await boundToken(f);
  f.remove('pods', 'istio-system', 'ztunnel-x');
  await refusedWith(f, token, '[invalid bearer token, service account token has been invalidated]', ['istio-ca']);
  const again = f.put('pods', 'istio-system', 'ztunnel-x', {
    spec: { serviceAccountName: 'ztunnel', nodeName: 'node-a' },
  });
  await refusedWith(
    f,
    token,
    `[invalid bearer token, pod UID (${again.metadata.uid}) does not match service account pod ref claim (${pod.metadata.uid})]`,
    ['istio-ca'],
  );
});

test('a pod being deleted invalidates its tokens once its deletionTimestamp is older than the leeway', async (t) => {
  const f = await AuthFixture.create(t);
  const { token, pod } = await boundToken(f);
  pod.metadata.deletionTimestamp = new Date(Date.now() - 30_000).toISOString();
  assert.equal((await review(f, token, ['istio-ca']))['authenticated'], true);
  pod.metadata.deletionTimestamp = new Date(Date.now() - 120_000).toISOString();
  await refusedWith(f, token, '[invalid bearer token, service account token has been invalidated]', ['istio-ca']);
});

test("a deleted service account's token fails TokenReview; so does one of a recreated account with a new uid", async (t) => {
  const f = await AuthFixture.create(t);
  const sa = f.put('serviceaccounts', 'default', 'web');
  const token = await f.token('default', 'web');
  f.remove('serviceaccounts', 'default', 'web');
  await refusedWith(f, token, '[invalid bearer token, serviceaccounts "web" not found]');
  const again = f.put('serviceaccounts', 'default', 'web');
  await refusedWith(
    f,
    token,
    `[invalid bearer token, service account UID (${again.metadata.uid}) does not match claim (${sa.metadata.uid})]`,
  );
});

test('a node-bound token fails once its node is deleted or recreated; a secret-bound one once its secret is', async (t) => {
  const f = await AuthFixture.create(t);
  f.put('serviceaccounts', 'default', 'web');
  const node = f.put('nodes', '', 'node-a');
  f.put('secrets', 'default', 's');
  const nodeToken = await f.token('default', 'web', {
    boundObjectRef: { kind: 'Node', apiVersion: 'v1', name: 'node-a' },
  });
  const secretToken = await f.token('default', 'web', {
    boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: 's' },
  });
  assert.equal((await review(f, nodeToken))['authenticated'], true);
  const again = f.put('nodes', '', 'node-a');
  await refusedWith(
    f,
    nodeToken,
    `[invalid bearer token, node UID (${again.metadata.uid}) does not match service account node ref claim (${node.metadata.uid})]`,
  );
  f.remove('secrets', 'default', 's');
  await refusedWith(f, secretToken, '[invalid bearer token, service account token has been invalidated]');
});

test('the admin token reviews as kubernetes-admin in system:masters for the API audiences only', async (t) => {
  const f = await AuthFixture.create(t);
  assert.deepEqual(await review(f, f.creds.adminToken), {
    authenticated: true,
    user: { username: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] },
    audiences: [DEFAULT_ISSUER],
  });
  await refusedWith(f, f.creds.adminToken, 'invalid bearer token', ['istio-ca']);
});

test('a TokenReview without a token is 400, as Kubernetes answers it', async (t) => {
  const f = await AuthFixture.create(t);
  await assert.rejects(
    reviewToken(f.authenticator, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      metadata: {},
      spec: {},
    }),
    (e: unknown) =>
      e instanceof ApiError && e.code === 400 && e.message === 'token is required for TokenReview in authentication',
  );
});
