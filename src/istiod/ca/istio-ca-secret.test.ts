import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { V1Secret } from '@kubernetes/client-node';
import { isMeshError } from '../../lib/errors.js';
import { createSelfSignedRootPem } from '../../lib/pki/ca-certificates.js';
import { CertificateAuthority } from '../../lib/pki/certificate-authority.js';
import { createKeyAndCsr } from '../../lib/pki/csr.js';
import { ISTIO_CA_SECRET_KEYS, istioCaSecret, signingCaFromSecret } from './istio-ca-secret.js';

const HOUR_MS = 3600_000;
const URI = 'spiffe://cluster.local/ns/a/sa/b';
const b64 = (s: string): string => Buffer.from(s).toString('base64');

test("the Secret has Istio's BuildSecret shape and reads back as a CA whose root is its ca-cert.pem", async () => {
  const { certPem, keyPem } = await createSelfSignedRootPem('O=cluster.local', HOUR_MS);
  const secret = istioCaSecret('istio-system', certPem, keyPem);
  assert.equal(secret.type, 'istio.io/ca-root');
  assert.deepEqual(secret.metadata, { name: 'istio-ca-secret', namespace: 'istio-system' });
  assert.deepEqual(Object.keys(secret.data ?? {}).sort(), [
    'ca-cert.pem',
    'ca-key.pem',
    'cert-chain.pem',
    'key.pem',
    'root-cert.pem',
  ]);
  assert.equal(secret.data?.['root-cert.pem'], b64(certPem));
  assert.equal(secret.data?.['cert-chain.pem'], '');
  const ca = signingCaFromSecret(secret);
  assert.equal(ca.rootBundlePem, certPem);
  assert.deepEqual(ca.intermediatesPem, [], 'the root signs leaves directly');
  assert.equal(ca.caCert.subject, 'O=cluster.local');
});

test(
  "a Secret Istio's istiod wrote (RSA 2048 root, PKCS#1 key, made here by openssl) signs leaves that verify in OpenSSL",
  { skip: spawnSync('openssl', ['version']).status === 0 ? false : 'needs the openssl command' },
  async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'amesh-ca-secret-'));
    try {
      const run = (...args: string[]): string => execFileSync('openssl', args, { cwd: dir, encoding: 'utf8' });
      run('genrsa', '-traditional', '-out', 'key.pem', '2048');
      run(
        'req',
        '-x509',
        '-new',
        '-key',
        'key.pem',
        '-subj',
        '/O=cluster.local',
        '-days',
        '3650',
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign',
        '-out',
        'cert.pem',
      );
      const [certPem, keyPem] = [
        await readFile(path.join(dir, 'cert.pem'), 'utf8'),
        await readFile(path.join(dir, 'key.pem'), 'utf8'),
      ];
      assert.match(keyPem, /BEGIN RSA PRIVATE KEY/);
      const ca = CertificateAuthority.fromSigningCa(
        signingCaFromSecret({
          metadata: { name: 'istio-ca-secret', namespace: 'istio-system' },
          type: 'istio.io/ca-root',
          data: {
            'ca-cert.pem': b64(certPem),
            'ca-key.pem': b64(keyPem),
            'root-cert.pem': b64(certPem),
            'cert-chain.pem': '',
            'key.pem': '',
          },
        }),
      );
      const [leaf, root] = await ca.sign((await createKeyAndCsr(URI)).csrPem, URI, 3600);
      assert.equal(new X509Certificate(root!).fingerprint256, new X509Certificate(certPem).fingerprint256);
      await writeFile(path.join(dir, 'leaf.pem'), leaf!);
      const verify = spawnSync('openssl', ['verify', '-x509_strict', '-CAfile', 'cert.pem', 'leaf.pem'], {
        cwd: dir,
        encoding: 'utf8',
      });
      assert.equal(verify.status, 0, verify.stdout + verify.stderr);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);

test('a malformed Secret is refused with ISTIOD_ERR_CA_SECRET, naming the Secret and the key at fault', async () => {
  const mine = await createSelfSignedRootPem('O=cluster.local', HOUR_MS);
  const other = await createSelfSignedRootPem('O=cluster.local', HOUR_MS);
  const good = istioCaSecret('mesh', mine.certPem, mine.keyPem);
  const withoutData: V1Secret = { metadata: good.metadata, type: good.type };
  const withData = (data: Record<string, string>): V1Secret => ({
    metadata: good.metadata,
    type: good.type,
    data: { ...good.data, ...data },
  });
  const k = ISTIO_CA_SECRET_KEYS;
  for (const [secret, why] of [
    [withoutData, /^Secret mesh\/istio-ca-secret key ca-cert\.pem: holds no PEM certificate/],
    [withData({ [k.caCert]: b64('not a certificate') }), /key ca-cert\.pem: holds no PEM certificate/],
    [
      withData({ [k.caCert]: b64('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n') }),
      /key ca-cert\.pem: certificate #1 does not parse/,
    ],
    [withData({ [k.caKey]: '' }), /key ca-key\.pem: is empty/],
    [withData({ [k.caKey]: b64('garbage') }), /key ca-key\.pem: not a PEM private key/],
    [withData({ [k.caKey]: b64(other.keyPem) }), /key ca-key\.pem: does not match the public key of ca-cert\.pem/],
  ] as const) {
    assert.throws(
      () => signingCaFromSecret(secret),
      (e: unknown) => isMeshError(e, 'ISTIOD_ERR_CA_SECRET') && why.test(e.message),
      String(why),
    );
  }
  assert.throws(
    () => signingCaFromSecret(good, Date.now() + 2 * HOUR_MS),
    (e: unknown) =>
      isMeshError(e, 'ISTIOD_ERR_CA_SECRET') &&
      /key ca-cert\.pem: certificate "O=cluster\.local" expired/.test(e.message),
  );
});
