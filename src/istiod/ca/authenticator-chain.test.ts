import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { isMeshError } from '../../lib/errors.js';
import { Authenticator } from './authenticate.js';
import { AuthenticatorChain } from './authenticator-chain.js';

/** An authenticator trusting only `issuer`, and a token from it for system:serviceaccount:app:web. */
async function issuer(iss: string): Promise<{ auth: Authenticator; token: string }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), alg: 'ES256' }] });
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256' })
    .setIssuer(iss)
    .setSubject('system:serviceaccount:app:web')
    .setAudience('istio-ca')
    .setExpirationTime('1h')
    .sign(privateKey);
  return { auth: new Authenticator([{ issuer: iss, jwks }], undefined, ['istio-ca']), token };
}

test('the first authenticator that accepts the token decides; one that refuses does not stop the next', async () => {
  const a = await issuer('https://a.example');
  const b = await issuer('https://b.example');
  const caller = await new AuthenticatorChain([a.auth, b.auth]).authenticate(`Bearer ${b.token}`);
  assert.deepEqual([caller.namespace, caller.serviceAccount, caller.issuer], ['app', 'web', 'https://b.example']);
});

test('when every authenticator refuses, the failure is opaque-coded and lists each reason once', async () => {
  const a = await issuer('https://a.example');
  const b = await issuer('https://b.example');
  const other = await issuer('https://c.example');
  await assert.rejects(new AuthenticatorChain([a.auth, b.auth]).authenticate(`Bearer ${other.token}`), (e: unknown) => {
    assert.ok(isMeshError(e, 'ISTIOD_ERR_AUTHENTICATION'));
    assert.equal(
      e.message,
      'request authenticate failure: unknown issuer "https://c.example" (trusted: https://a.example; add it with JWT_RULE); unknown issuer "https://c.example" (trusted: https://b.example; add it with JWT_RULE)',
    );
    return true;
  });
});
