import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isMeshError } from '../errors.js';
import { CLOCK_SKEW_GRACE_MS } from './ca-certificates.js';
import { CertificateAuthority } from './certificate-authority.js';
import { createKeyAndCsr } from './csr.js';
import { PLUGIN_CA_FILES, writePluginCaDir } from './plugin-ca-dir.js';
import { EC_P256, subtle, x509 } from './x509.js';

const URI = 'spiffe://cluster.local/ns/a/sa/b';
const DAY_MS = 24 * 3600_000;

/** A plug-in CA dir whose root signs directly and whose names are UTF8String (as openssl with utf8 = yes makes them). */
async function utf8CaDir(validDays: number): Promise<{ dir: string; subjectDer: Buffer }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-ca-unit-'));
  const keys = await subtle.generateKey(EC_P256, true, ['sign', 'verify']);
  const name = new x509.Name([{ '2.5.4.10': [{ utf8String: 'Istio' }] }, { '2.5.4.3': [{ utf8String: 'Root CA' }] }]);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + validDays * DAY_MS),
    keys,
    signingAlgorithm: EC_P256,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const pem = cert.toString('pem') + '\n';
  await writeFile(path.join(dir, PLUGIN_CA_FILES.caCert), pem);
  await writeFile(path.join(dir, PLUGIN_CA_FILES.rootCert), pem);
  await writeFile(path.join(dir, PLUGIN_CA_FILES.certChain), pem);
  await writeFile(
    path.join(dir, PLUGIN_CA_FILES.caKey),
    x509.PemConverter.encode(await subtle.exportKey('pkcs8', keys.privateKey), 'PRIVATE KEY'),
  );
  return { dir, subjectDer: Buffer.from(name.toArrayBuffer()) };
}

async function signLeaf(dir: string, ttlSeconds: number): Promise<x509.X509Certificate> {
  const ca = await CertificateAuthority.fromPluginDir(dir);
  const { csrPem } = await createKeyAndCsr(URI);
  return new x509.X509Certificate((await ca.sign(csrPem, URI, ttlSeconds))[0]!);
}

test("a leaf's issuer is the CA's UTF8String subject byte for byte (webpki and Go compare raw DER)", async () => {
  const { dir, subjectDer } = await utf8CaDir(365);
  try {
    const leaf = await signLeaf(dir, 3600);
    assert.equal(Buffer.from(leaf.issuerName.toArrayBuffer()).toString('hex'), subjectDer.toString('hex'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("a leaf is backdated by Istio's 2 minute clock-skew grace, carries exactly the URI SAN (critical) and is not a CA", async () => {
  const { dir } = await utf8CaDir(365);
  try {
    const before = Date.now();
    const leaf = await signLeaf(dir, 3600);
    const nb = leaf.notBefore.getTime();
    assert.ok(
      nb <= before - CLOCK_SKEW_GRACE_MS + 1000 && nb >= before - CLOCK_SKEW_GRACE_MS - 1000,
      `notBefore ${leaf.notBefore.toISOString()}`,
    );
    const san = leaf.getExtension(x509.SubjectAlternativeNameExtension)!;
    assert.equal(san.critical, true);
    assert.deepEqual(
      san.names.items.map((n) => [n.type, n.value]),
      [['url', URI]],
    );
    assert.equal(new X509Certificate(leaf.toString('pem')).ca, false);
    assert.equal(leaf.subject, '');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("a leaf never outlives the CA: its notAfter is capped at the CA's", async () => {
  const { dir } = await utf8CaDir(2);
  try {
    const ca = new X509Certificate(await readFile(path.join(dir, PLUGIN_CA_FILES.caCert)));
    const leaf = await signLeaf(dir, 30 * 24 * 3600);
    assert.equal(leaf.notAfter.getTime(), Date.parse(ca.validTo));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a CSR with data after its DER, text after its PEM block, or a bad signature is refused with ISTIOD_ERR_CSR', async () => {
  const ca = await CertificateAuthority.selfSigned('cluster.local');
  const { csrPem } = await createKeyAndCsr(URI);
  const der = Buffer.from(csrPem.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64');
  const pem = (b: Buffer): string => x509.PemConverter.encode(new Uint8Array(b), 'CERTIFICATE REQUEST');
  const tampered = Buffer.from(der);
  tampered.writeUInt8(tampered.readUInt8(tampered.length - 1) ^ 0x01, tampered.length - 1);
  for (const [bad, why] of [
    [pem(Buffer.concat([der, Buffer.from('junk')])), /4 bytes of trailing data/],
    [csrPem + 'junk', /not exactly one PEM/],
    [`junk\n${csrPem}`, /not exactly one PEM/],
    [csrPem + csrPem, /not exactly one PEM/],
    [pem(tampered), /signature does not verify|cannot parse/],
  ] as const) {
    await assert.rejects(
      ca.sign(bad, URI, 3600),
      (e: unknown) => isMeshError(e, 'ISTIOD_ERR_CSR') && why.test(e.message),
      bad.slice(0, 60),
    );
  }
});

test(
  "a leaf verifies in OpenSSL through the plug-in CA's intermediate to its root, with Istio's extensions",
  { skip: spawnSync('openssl', ['version']).status === 0 ? false : 'needs the openssl command' },
  async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'amesh-ca-unit-'));
    try {
      await writePluginCaDir(path.join(dir, 'ca'));
      const ca = await CertificateAuthority.fromPluginDir(path.join(dir, 'ca'));
      const { csrPem } = await createKeyAndCsr(URI);
      const [leaf, ...rest] = await ca.sign(csrPem, URI, 3600);
      await writeFile(path.join(dir, 'leaf.pem'), leaf!);
      await writeFile(path.join(dir, 'chain.pem'), rest.slice(0, -1).join(''));
      await writeFile(path.join(dir, 'root.pem'), rest[rest.length - 1]!);
      const verify = spawnSync(
        'openssl',
        [
          'verify',
          '-x509_strict',
          '-purpose',
          'sslclient',
          '-CAfile',
          'root.pem',
          '-untrusted',
          'chain.pem',
          'leaf.pem',
        ],
        { cwd: dir, encoding: 'utf8' },
      );
      assert.equal(verify.status, 0, verify.stdout + verify.stderr);
      const text = spawnSync('openssl', ['x509', '-noout', '-text', '-in', 'leaf.pem'], {
        cwd: dir,
        encoding: 'utf8',
      }).stdout;
      assert.match(text, /Version: 3 \(0x2\)/);
      assert.match(text, /X509v3 Basic Constraints: critical\n\s+CA:FALSE\n/);
      assert.match(text, /X509v3 Key Usage: critical\n\s+Digital Signature, Key Encipherment\n/);
      assert.match(
        text,
        /X509v3 Extended Key Usage: \n\s+TLS Web Server Authentication, TLS Web Client Authentication\n/,
      );
      assert.match(text, /X509v3 Subject Alternative Name: critical\n\s+URI:spiffe:\/\/cluster\.local\/ns\/a\/sa\/b\n/);
      const caSki = /X509v3 Subject Key Identifier: \n\s+([0-9A-F:]+)\n/.exec(
        spawnSync('openssl', ['x509', '-noout', '-text', '-in', path.join('ca', PLUGIN_CA_FILES.caCert)], {
          cwd: dir,
          encoding: 'utf8',
        }).stdout,
      )?.[1];
      assert.ok(
        caSki !== undefined && text.includes(caSki),
        "the leaf's authority key identifier is its CA's subject key identifier",
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);
