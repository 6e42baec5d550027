import { mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { isMeshError } from '../lib/errors.js';
import { loadKubeConfig, userTokenFile } from './kube-config.js';
import { tokenFileKubeconfig } from '../../test/helpers/token-file-kubeconfig.js';

const CLUSTER = {
  name: 'amesh',
  server: 'https://127.0.0.1:6443',
  caData: Buffer.from('ca').toString('base64'),
  skipTLSVerify: false,
};

async function tempDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-kube-config-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function authorization(kc: KubeConfig): Promise<string | undefined> {
  const opts: { headers?: Record<string, string> } = {};
  await kc.applyToHTTPSOptions(opts);
  return opts.headers?.['Authorization'];
}

test("a kubeconfig user's tokenFile (client-go's key, which client-node ignores) authenticates with the file's token", async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'kubeconfig');
  await writeFile(file, tokenFileKubeconfig(CLUSTER, 'istio-cni', path.join(dir, 'token')));
  await writeFile(path.join(dir, 'token'), 'first-token');
  const kc = loadKubeConfig(file, {});
  assert.equal(kc.getCurrentCluster()?.server, CLUSTER.server);
  assert.equal(kc.getCurrentUser()?.name, 'istio-cni');
  assert.equal(userTokenFile(kc), path.join(dir, 'token'));
  assert.equal(await authorization(kc), 'Bearer first-token');
});

test('a renewed token file is read again within a minute, as client-go rereads a tokenFile', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'kubeconfig');
  await writeFile(file, tokenFileKubeconfig(CLUSTER, 'istio-cni', path.join(dir, 'token')));
  await writeFile(path.join(dir, 'token'), 'first-token');
  mock.timers.enable({ apis: ['Date'], now: Date.now() });
  t.after(() => mock.timers.reset());
  const kc = loadKubeConfig(file, {});
  assert.equal(await authorization(kc), 'Bearer first-token');
  await writeFile(path.join(dir, 'token'), 'renewed-token');
  mock.timers.tick(61_000);
  assert.equal(await authorization(kc), 'Bearer renewed-token');
});

test("a relative tokenFile is relative to the kubeconfig's directory, as client-go resolves it", async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'kubeconfig');
  await writeFile(path.join(dir, 'sa-token'), 'relative-token');
  await writeFile(file, tokenFileKubeconfig(CLUSTER, 'u', 'sa-token'));
  const kc = loadKubeConfig(file, {});
  assert.equal(userTokenFile(kc), path.join(dir, 'sa-token'));
  assert.equal(await authorization(kc), 'Bearer relative-token');
});

test('a user with an inline token keeps it and reads no file', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'kubeconfig');
  await writeFile(
    file,
    `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: inline, tokenFile: /nonexistent}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
  );
  const kc = loadKubeConfig(file, {});
  assert.equal(userTokenFile(kc), undefined);
  assert.equal(await authorization(kc), 'Bearer inline');
});

test('a KUBECONFIG naming a missing file is skipped as client-go skips it; --kubeconfig naming one is an error', async (t) => {
  const dir = await tempDir(t);
  const missing = path.join(dir, 'remote', 'config');
  assert.throws(
    () => loadKubeConfig(undefined, { KUBECONFIG: missing }),
    (e) =>
      isMeshError(e, 'AMESH_ERR_CONFIG') && e.message.includes(`KUBECONFIG names ${missing}, which does not exist`),
  );
  assert.throws(
    () => loadKubeConfig(missing, {}),
    (e) => isMeshError(e, 'AMESH_ERR_CONFIG'),
  );
  const file = path.join(dir, 'kubeconfig');
  await writeFile(file, tokenFileKubeconfig(CLUSTER, 'u', 'token'));
  assert.equal(loadKubeConfig(undefined, { KUBECONFIG: file }).getCurrentCluster()?.server, CLUSTER.server);
});
