import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT, type JWK } from 'jose';
import { isMeshError } from '../../lib/errors.js';
import { Authenticator } from './authenticate.js';

const ISSUER = 'https://kubernetes.default.svc';
const SUB = 'system:serviceaccount:frontend:web';

async function setup(): Promise<{
  auth: Authenticator;
  sign: (claims: Record<string, unknown>, o?: { exp?: string | false; aud?: string }) => Promise<string>;
  publicJwk: JWK;
}> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const publicJwk = { ...(await exportJWK(publicKey)), alg: 'ES256' };
  const local = await generateKeyPair('ES256');
  const auth = new Authenticator(
    [{ issuer: ISSUER, jwks: JSON.stringify({ keys: [publicJwk] }) }],
    await exportJWK(local.publicKey),
    ['istio-ca'],
  );
  const sign = (claims: Record<string, unknown>, o: { exp?: string | false; aud?: string } = {}): Promise<string> => {
    const j = new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer(ISSUER)
      .setSubject(SUB)
      .setAudience(o.aud ?? 'istio-ca')
      .setIssuedAt();
    if (o.exp !== false) j.setExpirationTime(o.exp ?? '1h');
    return j.sign(privateKey);
  };
  return { auth, sign, publicJwk };
}

const refused = async (auth: Authenticator, token: string, why: RegExp): Promise<void> => {
  await assert.rejects(auth.authenticate(`Bearer ${token}`), (e: unknown) => {
    assert.ok(isMeshError(e, 'ISTIOD_ERR_AUTHENTICATION'), String(e));
    assert.match(e.message, why);
    return true;
  });
};

test('a valid service-account token from a JWT_RULE issuer authenticates as its namespace and service account; its pod UID claim vouches for nothing', async () => {
  const { auth, sign } = await setup();
  const caller = await auth.authenticate(
    `Bearer ${await sign({ 'kubernetes.io': { node: { name: 'node1' }, pod: { name: 'web-0', uid: 'u-1' } } })}`,
  );
  assert.deepEqual(caller, {
    namespace: 'frontend',
    serviceAccount: 'web',
    node: 'node1',
    pod: 'web-0',
    podUid: undefined,
    issuer: ISSUER,
  });
});

test('an unsigned token (alg: none) is refused', async () => {
  const { auth } = await setup();
  const none = new UnsecuredJWT({})
    .setIssuer(ISSUER)
    .setSubject(SUB)
    .setAudience('istio-ca')
    .setExpirationTime('1h')
    .encode();
  await refused(auth, none, /alg|Unsupported|signature|JWS/i);
});

test("an HS256 token keyed with the issuer's public key (algorithm confusion) is refused", async () => {
  const { auth, publicJwk } = await setup();
  const secret = new TextEncoder().encode(JSON.stringify(publicJwk));
  const hs = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(ISSUER)
    .setSubject(SUB)
    .setAudience('istio-ca')
    .setExpirationTime('1h')
    .sign(secret);
  await refused(auth, hs, /alg|key|JWS/i);
});

test('a token without exp is refused', async () => {
  const { auth, sign } = await setup();
  await refused(auth, await sign({}, { exp: false }), /"exp" claim/);
});

test('a token minted already expired is refused', async () => {
  const { auth, sign } = await setup();
  await refused(auth, await sign({}, { exp: '-60s' }), /expired/);
});

test('a token for another audience is refused', async () => {
  const { auth, sign } = await setup();
  await refused(auth, await sign({}, { aud: 'kubernetes' }), /audience "kubernetes" is not one of istio-ca/);
});

test('a token whose subject is not a service account is refused', async () => {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), alg: 'ES256' };
  const other = new Authenticator([{ issuer: ISSUER, jwks: JSON.stringify({ keys: [jwk] }) }], jwk, ['istio-ca']);
  const t = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256' })
    .setIssuer(ISSUER)
    .setSubject('admin')
    .setAudience('istio-ca')
    .setExpirationTime('1h')
    .sign(privateKey);
  await refused(other, t, /not system:serviceaccount/);
});

test('a missing, non-Bearer or non-JWT authorization header is refused', async () => {
  const { auth } = await setup();
  await refused(auth, 'not.a.jwt', /not a JWT/);
  await assert.rejects(auth.authenticate(undefined), (e: unknown) => isMeshError(e, 'ISTIOD_ERR_AUTHENTICATION'));
  await assert.rejects(auth.authenticate('Basic dXNlcjpwYXNz'), (e: unknown) =>
    isMeshError(e, 'ISTIOD_ERR_AUTHENTICATION'),
  );
});
