import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { isMeshError } from '../../lib/errors.js';
import {
  KUBECONFIG_NAMES,
  PKI_DIR,
  PKI_FILES,
  loadOrCreateClusterCredentials,
  serverUrl,
  type ClusterCredentialsOptions,
} from './cluster-credentials.js';

async function dataDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const base = await mkdtemp(path.join(tmpdir(), 'amesh-creds-'));
  t.after(() => rm(base, { recursive: true, force: true }));
  return path.join(base, 'data');
}

const opts = (dir: string, o: Partial<ClusterCredentialsOptions> = {}): ClusterCredentialsOptions => ({
  dataDir: dir,
  listenHost: '127.0.0.1',
  listenPort: 6443,
  serviceIp: '10.96.0.1',
  ...o,
});
const mode = async (p: string): Promise<number> => (await stat(p)).mode & 0o777;

test('credentials are created once, private (0700 dirs, 0600 files), and reloaded unchanged on the next start', async (t) => {
  const dir = await dataDir(t);
  const first = await loadOrCreateClusterCredentials(opts(dir));
  assert.equal(await mode(dir), 0o700);
  assert.equal(await mode(path.join(dir, PKI_DIR)), 0o700);
  for (const f of Object.values(PKI_FILES)) assert.equal(await mode(path.join(dir, PKI_DIR, f)), 0o600, f);
  assert.equal(await mode(first.kubeconfigPath), 0o600);
  assert.equal(Buffer.from(first.adminToken, 'base64url').length, 32);
  const files = await Promise.all(Object.values(PKI_FILES).map((f) => readFile(path.join(dir, PKI_DIR, f), 'utf8')));

  const again = await loadOrCreateClusterCredentials(opts(dir));
  assert.equal(again.adminToken, first.adminToken);
  assert.equal(again.caCertPem, first.caCertPem);
  assert.equal(again.servingCertPem, first.servingCertPem);
  assert.equal(again.serviceAccountKey.keyId, first.serviceAccountKey.keyId);
  assert.deepEqual(
    await Promise.all(Object.values(PKI_FILES).map((f) => readFile(path.join(dir, PKI_DIR, f), 'utf8'))),
    files,
  );
  assert.deepEqual((await readdir(dir)).sort(), ['kubeconfig', 'pki'], 'no temporary directory is left behind');
});

test('the CA is a self-signed P-256 CA and the serving certificate it signs names loopback, the kubernetes service and the listen host', async (t) => {
  const dir = await dataDir(t);
  const c = await loadOrCreateClusterCredentials(opts(dir, { listenHost: '127.0.9.1' }));
  const ca = new X509Certificate(c.caCertPem);
  assert.ok(ca.ca);
  assert.equal(ca.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
  assert.ok(ca.verify(ca.publicKey));
  const serving = new X509Certificate(c.servingCertPem);
  assert.ok(serving.checkIssued(ca) && serving.verify(ca.publicKey));
  for (const h of ['127.0.0.1', '::1', '10.96.0.1', '127.0.9.1']) assert.equal(serving.checkIP(h), h, h);
  for (const h of [
    'localhost',
    'kubernetes',
    'kubernetes.default',
    'kubernetes.default.svc',
    'kubernetes.default.svc.cluster.local',
  ])
    assert.equal(serving.checkHost(h), h, h);
});

test('a new listen address reissues the serving certificate with the same key and rewrites the kubeconfig; keys and token stay', async (t) => {
  const dir = await dataDir(t);
  const first = await loadOrCreateClusterCredentials(opts(dir));
  const saKey = await readFile(path.join(dir, PKI_DIR, PKI_FILES.serviceAccountKey), 'utf8');
  const moved = await loadOrCreateClusterCredentials(opts(dir, { listenHost: 'amesh.example', listenPort: 7443 }));
  assert.equal(moved.serverUrl, 'https://amesh.example:7443');
  assert.notEqual(moved.servingCertPem, first.servingCertPem);
  assert.equal(new X509Certificate(moved.servingCertPem).checkHost('amesh.example'), 'amesh.example');
  assert.equal(moved.servingKeyPem, first.servingKeyPem);
  assert.equal(moved.adminToken, first.adminToken);
  assert.equal(await readFile(path.join(dir, PKI_DIR, PKI_FILES.serviceAccountKey), 'utf8'), saKey);
  assert.match(await readFile(moved.kubeconfigPath, 'utf8'), /server: https:\/\/amesh\.example:7443/);
  assert.equal(await mode(moved.kubeconfigPath), 0o600);
});

test('the kubeconfig is one @kubernetes/client-node loads: admin user with the token, the CA and the server URL as current context', async (t) => {
  const dir = await dataDir(t);
  const c = await loadOrCreateClusterCredentials(opts(dir, { listenHost: '::1' }));
  const kc = new KubeConfig();
  kc.loadFromFile(c.kubeconfigPath);
  assert.equal(kc.getCurrentContext(), KUBECONFIG_NAMES.context);
  assert.equal(kc.getCurrentUser()?.name, 'admin');
  assert.equal(kc.getCurrentUser()?.token, c.adminToken);
  assert.equal(kc.getCurrentCluster()?.server, 'https://[::1]:6443');
  assert.equal(Buffer.from(kc.getCurrentCluster()?.caData ?? '', 'base64').toString(), c.caCertPem);
});

test('serverUrl reaches a wildcard listen address on loopback of the same family', () => {
  assert.equal(serverUrl('0.0.0.0', 6443), 'https://127.0.0.1:6443');
  assert.equal(serverUrl('::', 6443), 'https://[::1]:6443');
});

test('a data directory group or others can access is refused, as istiod refuses its state directory', async (t) => {
  const dir = await dataDir(t);
  await mkdir(dir, { mode: 0o700 });
  await chmod(dir, 0o750);
  await assert.rejects(
    loadOrCreateClusterCredentials(opts(dir)),
    (e: unknown) => isMeshError(e, 'APISERVER_ERR_DATA_DIR') && /chmod 700/.test(e.message),
  );
  assert.deepEqual(await readdir(dir), [], 'nothing is written into it');
});

test('a credentials directory missing a file is refused naming the file, never silently recreated', async (t) => {
  const dir = await dataDir(t);
  await loadOrCreateClusterCredentials(opts(dir));
  await unlink(path.join(dir, PKI_DIR, PKI_FILES.serviceAccountKey));
  await assert.rejects(
    loadOrCreateClusterCredentials(opts(dir)),
    (e: unknown) => isMeshError(e, 'APISERVER_ERR_DATA_DIR') && e.message.includes(PKI_FILES.serviceAccountKey),
  );
  await assert.rejects(readFile(path.join(dir, PKI_DIR, PKI_FILES.serviceAccountKey)), /ENOENT/);
});

test('a service-account public key that does not match its private key is refused', async (t) => {
  const dir = await dataDir(t);
  await loadOrCreateClusterCredentials(opts(dir));
  const other = await dataDir(t);
  await loadOrCreateClusterCredentials(opts(other));
  await writeFile(
    path.join(dir, PKI_DIR, PKI_FILES.serviceAccountPublicKey),
    await readFile(path.join(other, PKI_DIR, PKI_FILES.serviceAccountPublicKey)),
  );
  await assert.rejects(
    loadOrCreateClusterCredentials(opts(dir)),
    (e: unknown) => isMeshError(e, 'APISERVER_ERR_DATA_DIR') && /sa\.pub does not match/.test(e.message),
  );
});
