import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { RequestAuthenticationSchema } from '../api/amesh/waypoint/v1/waypoint_pb.js';
import { authenticateRequest, jwtPoliciesFromXds, type JwtPolicy } from './jwt-authenticator.js';

const ISSUER = 'https://issuer.example.com';
const SHOP = 'shop/reviews.shop.svc.cluster.local';
let key: CryptoKey;
let other: CryptoKey;
let jwk: JWK;

before(async () => {
  const pair = await generateKeyPair('RS256');
  key = pair.privateKey;
  jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256' };
  other = (await generateKeyPair('RS256')).privateKey;
});

function token(
  claims: Record<string, unknown> = {},
  o: { signer?: CryptoKey; exp?: number | string; iss?: string } = {},
): Promise<string> {
  return new SignJWT({ sub: 'alice', aud: 'reviews', ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
    .setIssuer(o.iss ?? ISSUER)
    .setIssuedAt()
    .setExpirationTime(o.exp ?? '10m')
    .sign(o.signer ?? key);
}

function policies(
  rule: Partial<MessageInitShape<typeof RequestAuthenticationSchema>['rules'] & object>[number] = {},
  services: string[] = [],
): readonly JwtPolicy[] {
  const ra = create(RequestAuthenticationSchema, {
    name: 'shop/jwt',
    services,
    rules: [{ issuer: ISSUER, jwks: JSON.stringify({ keys: [jwk] }), ...rule }],
  });
  const out = jwtPoliciesFromXds([ra], () => assert.fail('no remote keys in these tests'));
  assert.deepEqual(out.rejected, []);
  return out.policies;
}

const bearer = (t: string): Record<string, string> => ({ authorization: `Bearer ${t}` });

test('a request without a token passes with no principal; a valid Bearer token gives iss/sub and is not forwarded', async () => {
  const none = await authenticateRequest(policies(), SHOP, { url: '/', headers: {} });
  assert.deepEqual(none.ok && none.jwt, undefined);
  const r = await authenticateRequest(policies(), SHOP, { url: '/', headers: bearer(await token({ azp: 'web' })) });
  assert.ok(r.ok);
  assert.equal(r.jwt?.principal, `${ISSUER}/alice`);
  assert.deepEqual(r.jwt?.audiences, ['reviews']);
  assert.equal(r.jwt?.presenter, 'web');
  assert.deepEqual(r.headers?.remove, ['authorization'], 'forwardOriginalToken is false by default');
});

test("a token that fails gets Envoy's words: bad signature, expired, wrong audience, an issuer no rule names, not a JWT", async () => {
  const body = async (headers: Record<string, string>, p = policies()): Promise<string | undefined> => {
    const r = await authenticateRequest(p, SHOP, { url: '/', headers });
    return r.ok ? undefined : r.body;
  };
  assert.equal(await body(bearer(await token({}, { signer: other }))), 'Jwt verification fails');
  assert.equal(await body(bearer(await token({}, { exp: Math.floor(Date.now() / 1000) - 3600 }))), 'Jwt is expired');
  assert.equal(
    await body(bearer(await token()), policies({ audiences: ['ratings'] })),
    'Audiences in Jwt are not allowed',
  );
  assert.equal(await body(bearer(await token({}, { iss: 'https://other' }))), 'Jwt issuer is not configured');
  assert.equal(
    await body(bearer('not.a-jwt')),
    'Jwt is not in the form of Header.Payload.Signature with two dots and 3 sections',
  );
});

test('a token expired by less than the clock skew Envoy allows still passes', async () => {
  const r = await authenticateRequest(policies(), SHOP, {
    url: '/',
    headers: bearer(await token({}, { exp: Math.floor(Date.now() / 1000) - 30 })),
  });
  assert.ok(r.ok);
});

test('fromHeaders and fromParams replace the default places; forwardOriginalToken and output headers shape the forwarded request', async () => {
  const t = await token({ group: 'admins' });
  const p = policies({
    fromHeaders: [{ name: 'X-Jwt', prefix: 'Token ' }],
    fromParams: ['jwt'],
    outputPayloadToHeader: 'x-jwt-payload',
    outputClaimToHeaders: [{ header: 'x-group', claim: 'group' }],
  });
  const ignored = await authenticateRequest(p, SHOP, { url: '/', headers: bearer(t) });
  assert.ok(ignored.ok && ignored.jwt === undefined, 'Authorization is not looked at once fromHeaders is given');
  const byHeader = await authenticateRequest(p, SHOP, { url: '/', headers: { 'x-jwt': `Token ${t}` } });
  assert.ok(byHeader.ok);
  assert.deepEqual(byHeader.headers, {
    set: [
      ['x-jwt-payload', t.split('.')[1]],
      ['x-group', 'admins'],
    ],
    add: [],
    remove: ['x-jwt'],
  });
  const byParam = await authenticateRequest(p, SHOP, { url: `/a?x=1&jwt=${t}`, headers: {} });
  assert.ok(byParam.ok && byParam.jwt !== undefined);
  assert.equal(byParam.url, '/a?x=1', 'the token is taken out of the forwarded query');
  const kept = await authenticateRequest(policies({ forwardOriginalToken: true }), SHOP, {
    url: '/',
    headers: bearer(t),
  });
  assert.deepEqual(kept.ok && kept.headers?.remove, []);
});

test('a RequestAuthentication for one Service does not check requests for another', async () => {
  const p = policies({}, ['shop/ratings.shop.svc.cluster.local']);
  const r = await authenticateRequest(p, SHOP, { url: '/', headers: bearer('garbage') });
  assert.ok(r.ok && r.jwt === undefined);
});

test('inline keys that are not a key set are rejected, and the rule then refuses every token of its issuer', async () => {
  const ra = create(RequestAuthenticationSchema, { name: 'shop/bad', rules: [{ issuer: ISSUER, jwks: '{nope' }] });
  const out = jwtPoliciesFromXds([ra], () => assert.fail('no remote keys'));
  assert.equal(out.rejected.length, 1);
  const r = await authenticateRequest(out.policies, SHOP, { url: '/', headers: bearer(await token()) });
  assert.equal(r.ok ? undefined : r.body, 'Jwt verification fails');
});
