import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isMeshError, type ErrorCode } from '../errors.js';
import { CertificateAuthority } from './certificate-authority.js';
import { createKeyAndCsr } from './csr.js';
import {
  inspectPluginCaDir,
  PLUGIN_CA_FILES,
  readPluginCaDir,
  TLS_SECRET_CA_FILES,
  writePluginCaDir,
} from './plugin-ca-dir.js';
import { ensurePrivateDir } from './private-files.js';

async function withDirs(fn: (a: string, b: string, base: string) => Promise<void>): Promise<void> {
  const base = await mkdtemp(path.join(tmpdir(), 'amesh-plugin-ca-'));
  try {
    await writePluginCaDir(path.join(base, 'a'));
    await writePluginCaDir(path.join(base, 'b'));
    await fn(path.join(base, 'a'), path.join(base, 'b'), base);
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

const refused = async (p: Promise<unknown>, code: ErrorCode, why: RegExp): Promise<void> => {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(isMeshError(e, code), String(e));
    assert.match(e.message, why);
    return true;
  });
};

test('a directory written by create-ca loads: ca-cert chains to root-cert through cert-chain', async () => {
  await withDirs(async (a) => {
    const ca = await readPluginCaDir(a);
    assert.equal(ca.intermediatesPem.length, 1);
    assert.equal(ca.caCert.subject, 'O=Istio\nCN=Intermediate CA\nL=cluster.local');
  });
});

test("a kubernetes.io/tls Secret's files (tls.crt, tls.key, ca.crt) are read in place of Istio's when tls.crt is there", async () => {
  await withDirs(async (a, b, base) => {
    const tls = path.join(base, 'tls');
    await mkdir(tls);
    await copyFile(path.join(a, PLUGIN_CA_FILES.caCert), path.join(tls, TLS_SECRET_CA_FILES.caCert));
    await copyFile(path.join(a, PLUGIN_CA_FILES.caKey), path.join(tls, TLS_SECRET_CA_FILES.caKey));
    // Istio's files of another CA beside them are ignored.
    for (const f of Object.values(PLUGIN_CA_FILES)) await copyFile(path.join(b, f), path.join(tls, f));
    assert.deepEqual(await inspectPluginCaDir(tls), {
      form: 'tls',
      names: { caCert: 'tls.crt', caKey: 'tls.key', rootCert: 'ca.crt', certChain: 'tls.crt' },
      present: ['tls.crt', 'tls.key'],
      missing: ['ca.crt'],
    });
    await refused(
      readPluginCaDir(tls),
      'ZT_ERR_CA_FILES',
      /ca\.crt: cannot read it .*needs tls\.crt, tls\.key, ca\.crt/,
    );
    await copyFile(path.join(a, PLUGIN_CA_FILES.rootCert), path.join(tls, TLS_SECRET_CA_FILES.rootCert));
    const ca = await readPluginCaDir(tls);
    assert.equal(ca.rootBundlePem, await readFile(path.join(a, PLUGIN_CA_FILES.rootCert), 'utf8'));
    assert.deepEqual(ca.intermediatesPem, [await readFile(path.join(a, PLUGIN_CA_FILES.caCert), 'utf8')]);
  });
});

test('a directory that does not exist holds no plug-in CA file', async () => {
  assert.deepEqual(await inspectPluginCaDir(path.join(tmpdir(), 'amesh-no-such-dir', 'cacerts')), {
    form: 'istio',
    names: PLUGIN_CA_FILES,
    present: [],
    missing: Object.values(PLUGIN_CA_FILES),
  });
});

test('a ca-key.pem from another CA is refused, naming ca-key.pem', async () => {
  await withDirs(async (a, b) => {
    await copyFile(path.join(b, PLUGIN_CA_FILES.caKey), path.join(a, PLUGIN_CA_FILES.caKey));
    await refused(readPluginCaDir(a), 'ZT_ERR_CA_FILES', /ca-key\.pem: does not match/);
  });
});

test('a root-cert.pem that ca-cert.pem does not chain to is refused, naming ca-cert.pem', async () => {
  await withDirs(async (a, b) => {
    await copyFile(path.join(b, PLUGIN_CA_FILES.rootCert), path.join(a, PLUGIN_CA_FILES.rootCert));
    await copyFile(path.join(b, PLUGIN_CA_FILES.rootCert), path.join(a, PLUGIN_CA_FILES.certChain));
    await refused(
      readPluginCaDir(a),
      'ZT_ERR_CA_FILES',
      /ca-cert\.pem: does not chain to a certificate in root-cert\.pem through cert-chain\.pem/,
    );
  });
});

test('a ca-cert.pem that is not a CA certificate is refused', async () => {
  await withDirs(async (a, _b, base) => {
    // A leaf issued by the CA, with its own key, posing as the signing certificate.
    const { keyPem, csrPem } = await createKeyAndCsr('spiffe://cluster.local/ns/a/sa/b');
    const [leaf] = await (
      await CertificateAuthority.fromPluginDir(a)
    ).sign(csrPem, 'spiffe://cluster.local/ns/a/sa/b', 3600);
    await mkdir(path.join(base, 'leaf'));
    for (const f of [PLUGIN_CA_FILES.rootCert, PLUGIN_CA_FILES.certChain])
      await copyFile(path.join(a, f), path.join(base, 'leaf', f));
    await writeFile(path.join(base, 'leaf', PLUGIN_CA_FILES.caCert), leaf!);
    await writeFile(path.join(base, 'leaf', PLUGIN_CA_FILES.caKey), keyPem);
    await refused(readPluginCaDir(path.join(base, 'leaf')), 'ZT_ERR_CA_FILES', /ca-cert\.pem: is not a CA certificate/);
  });
});

test('a CA outside its validity is refused', async () => {
  await withDirs(async (a) => {
    await refused(
      readPluginCaDir(a, Date.now() + 100 * 365 * 24 * 3600_000),
      'ZT_ERR_CA_FILES',
      /ca-cert\.pem: certificate ".*" expired/,
    );
  });
});

test('a missing file is refused, naming it', async () => {
  await withDirs(async (a) => {
    await rm(path.join(a, PLUGIN_CA_FILES.certChain));
    await refused(readPluginCaDir(a), 'ZT_ERR_CA_FILES', /cert-chain\.pem: cannot read it/);
  });
});

test('create-ca refuses a directory that already holds CA files, and leaves them as they were', async () => {
  await withDirs(async (a) => {
    const before = await readFile(path.join(a, PLUGIN_CA_FILES.caKey), 'utf8');
    await refused(
      writePluginCaDir(a),
      'AMESH_ERR_CA_EXISTS',
      /already holds CA material \(ca-cert\.pem, ca-key\.pem, root-cert\.pem, cert-chain\.pem\)/,
    );
    assert.equal(await readFile(path.join(a, PLUGIN_CA_FILES.caKey), 'utf8'), before);
  });
});

test('create-ca writes ca-key.pem with mode 0600 whatever the umask', async () => {
  const base = await mkdtemp(path.join(tmpdir(), 'amesh-plugin-ca-'));
  const old = process.umask(0);
  try {
    await writePluginCaDir(path.join(base, 'ca'));
    assert.equal((await stat(path.join(base, 'ca', PLUGIN_CA_FILES.caKey))).mode & 0o777, 0o600);
    assert.equal((await stat(path.join(base, 'ca'))).mode & 0o777, 0o700);
  } finally {
    process.umask(old);
    await rm(base, { recursive: true, force: true });
  }
});

test('a state directory that group or others may use is refused; a new one is created 0700', async () => {
  const base = await mkdtemp(path.join(tmpdir(), 'amesh-state-'));
  try {
    await ensurePrivateDir(path.join(base, 'new'), 'ISTIOD_ERR_STATE', 'istiod state directory');
    assert.equal((await stat(path.join(base, 'new'))).mode & 0o777, 0o700);
    await chmod(path.join(base, 'new'), 0o755);
    await refused(
      ensurePrivateDir(path.join(base, 'new'), 'ISTIOD_ERR_STATE', 'istiod state directory'),
      'ISTIOD_ERR_STATE',
      /has mode 755.*chmod 700/,
    );
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});
