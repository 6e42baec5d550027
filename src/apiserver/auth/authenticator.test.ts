import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthFixture } from '../../../test/helpers/auth-fixture.js';
import { bearerToken } from './authenticator.js';

test('the admin token authenticates as kubernetes-admin in system:masters', async (t) => {
  const f = await AuthFixture.create(t);
  assert.deepEqual(await f.authenticator.authenticate(`Bearer ${f.creds.adminToken}`), {
    username: 'kubernetes-admin',
    groups: ['system:masters', 'system:authenticated'],
  });
  assert.deepEqual(
    await f.authenticator.authenticate(`bearer ${f.creds.adminToken}`),
    { username: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] },
    'the scheme is case-insensitive',
  );
});

test('a service-account token from TokenRequest authenticates as system:serviceaccount:NS:NAME with the service-account groups', async (t) => {
  const f = await AuthFixture.create(t);
  const sa = f.put('serviceaccounts', 'istio-system', 'istiod');
  const user = await f.authenticator.authenticate(`Bearer ${await f.token('istio-system', 'istiod')}`);
  assert.equal(user?.username, 'system:serviceaccount:istio-system:istiod');
  assert.equal(user?.uid, sa.metadata.uid);
  assert.deepEqual(user?.groups, [
    'system:serviceaccounts',
    'system:serviceaccounts:istio-system',
    'system:authenticated',
  ]);
});

test('no header, another scheme, an empty token and an unknown token are unauthenticated (401 at the HTTP layer)', async (t) => {
  const f = await AuthFixture.create(t);
  for (const h of [
    undefined,
    '',
    'Basic YWRtaW46YWRtaW4=',
    'Bearer',
    'Bearer ',
    `Token ${f.creds.adminToken}`,
    `Bearer ${f.creds.adminToken}x`,
    'Bearer nope',
  ]) {
    assert.equal(await f.authenticator.authenticate(h), undefined, String(h));
  }
});

test('a refused token is logged with APISERVER_ERR_AUTHENTICATION, the reason and the subject, never the token', async (t) => {
  const f = await AuthFixture.create(t);
  f.put('serviceaccounts', 'default', 'web');
  const token = await f.expiredToken('default', 'web');
  assert.equal(await f.authenticator.authenticate(`Bearer ${token}`), undefined);
  const line = await f.logs.waitFor(
    'authentication failure',
    (l) => l['code'] === 'APISERVER_ERR_AUTHENTICATION' && l['level'] === 'warn',
  );
  assert.equal(line['reason'], '[invalid bearer token, service account token has expired]');
  assert.equal(line['subject'], 'system:serviceaccount:default:web');
  await f.authenticator.authenticate(`Bearer ${f.creds.adminToken}zz`);
  const all = JSON.stringify(f.logs.lines);
  assert.ok(!all.includes(token.split('.')[2]!), 'the token signature is not in the log');
  assert.ok(!all.includes(f.creds.adminToken), 'the admin token is not in the log');
});

test('bearerToken takes the token after "Bearer " as kube-apiserver does, ignoring anything after a second space', () => {
  assert.equal(bearerToken('  Bearer abc  '), 'abc');
  assert.equal(bearerToken('Bearer abc def'), 'abc');
  assert.equal(bearerToken('Bearer  abc'), undefined);
  assert.equal(bearerToken('Basic abc'), undefined);
});
