import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import { createKeyAndCsr } from './csr.js';
import { csrUriSans } from './parse-csr.js';

const URI = 'spiffe://cluster.local/ns/bench/sa/client';
const openssl = spawnSync('openssl', ['version']).status === 0;

test(
  'a workload CSR verifies in OpenSSL: empty subject, one critical URI SAN, P-256 key, ecdsa-with-SHA256',
  { skip: openssl ? false : 'needs the openssl command' },
  async () => {
    const { csrPem } = await createKeyAndCsr(URI);
    const r = spawnSync('openssl', ['req', '-noout', '-text', '-verify'], { input: csrPem, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr + r.stdout, /verify OK/);
    assert.match(r.stdout, /Subject: *\n/);
    assert.match(
      r.stdout,
      /X509v3 Subject Alternative Name: critical\n\s+URI:spiffe:\/\/cluster\.local\/ns\/bench\/sa\/client\n/,
    );
    assert.match(r.stdout, /NIST CURVE: P-256/);
    assert.match(r.stdout, /Signature Algorithm: ecdsa-with-SHA256/);
  },
);

test("a workload CSR reads back through the CA's parser with exactly its URI, and its key is a PKCS#8 P-256 key", async () => {
  const { csrPem, keyPem } = await createKeyAndCsr(URI);
  assert.deepEqual(csrUriSans(csrPem), [URI]);
  assert.match(keyPem, /^-----BEGIN PRIVATE KEY-----\n/);
  assert.equal(createPrivateKey(keyPem).asymmetricKeyDetails?.namedCurve, 'prime256v1');
});
