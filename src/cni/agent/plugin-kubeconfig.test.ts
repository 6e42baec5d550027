import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { CapturedLogs } from '../../../test/helpers/captured-logs.js';
import { eventAfter } from '../../../test/helpers/fs-events.js';
import { loadKubeConfig } from '../../kube/kube-config.js';
import { tokenFileKubeconfig } from '../../../test/helpers/token-file-kubeconfig.js';
import { isMeshError } from '../../lib/errors.js';
import { PluginKubeconfig } from './plugin-kubeconfig.js';

const CA_PEM = '-----BEGIN CERTIFICATE-----\nnot-really\n-----END CERTIFICATE-----\n';

interface Setup {
  readonly dir: string;
  readonly tokenFile: string;
  readonly pluginFile: string;
  readonly logs: CapturedLogs;
  /** The agent's kubeconfig: the API's CA by file, the istio-cni token by tokenFile, as `amesh up` writes it. */
  readonly agentKubeconfig: string;
}

async function setup(t: { after: (fn: () => Promise<void>) => void }): Promise<Setup> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-plugin-kubeconfig-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, 'ca.crt'), CA_PEM);
  const tokenFile = path.join(dir, 'sa', 'token');
  await mkdir(path.dirname(tokenFile));
  const agentKubeconfig = path.join(dir, 'kubeconfig');
  await writeFile(
    agentKubeconfig,
    tokenFileKubeconfig(
      { name: 'amesh', server: 'https://127.0.0.1:6443', caFile: path.join(dir, 'ca.crt'), skipTLSVerify: false },
      'istio-cni',
      tokenFile,
    ),
  );
  return {
    dir,
    tokenFile,
    pluginFile: path.join(dir, 'istio-cni-kubeconfig'),
    logs: new CapturedLogs('cni-agent'),
    agentKubeconfig,
  };
}

/** The plugin's view: its kubeconfig loaded as amesh-cni loads it (client-node's loadFromFile, no tokenFile support). */
async function asPlugin(file: string): Promise<{ kc: KubeConfig; authorization: string | undefined; text: string }> {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  const opts: { headers?: Record<string, string> } = {};
  await kc.applyToHTTPSOptions(opts);
  return { kc, authorization: opts.headers?.['Authorization'], text: await readFile(file, 'utf8') };
}

/** Renews the token as the kubelet (and `amesh up`) do: a new file renamed over the old. */
async function renew(tokenFile: string, token: string): Promise<void> {
  await writeFile(`${tokenFile}.tmp`, token);
  await rename(`${tokenFile}.tmp`, tokenFile);
}

test("the plugin's kubeconfig carries the agent's service-account token and CA written in, under Istio's names, mode 0600", async (t) => {
  const s = await setup(t);
  await writeFile(s.tokenFile, 'istio-cni-token-1\n');
  const p = await PluginKubeconfig.start(
    loadKubeConfig(s.agentKubeconfig, {}),
    s.pluginFile,
    s.logs.control.scope('plugin-kubeconfig'),
  );
  t.after(() => p.close());
  const plugin = await asPlugin(s.pluginFile);
  assert.equal(plugin.authorization, 'Bearer istio-cni-token-1');
  assert.equal(plugin.kc.getCurrentContext(), 'istio-cni-context');
  assert.equal(plugin.kc.getCurrentUser()?.name, 'istio-cni');
  assert.equal(plugin.kc.getCurrentCluster()?.name, 'local');
  assert.equal(plugin.kc.getCurrentCluster()?.server, 'https://127.0.0.1:6443');
  assert.equal(Buffer.from(plugin.kc.getCurrentCluster()?.caData ?? '', 'base64').toString(), CA_PEM);
  assert.doesNotMatch(plugin.text, /tokenFile|auth-provider|ca\.crt/);
  assert.equal((await stat(s.pluginFile)).mode & 0o777, 0o600);
});

test("a renewed token is written into the plugin's kubeconfig, so a plugin started after the old token expired still authenticates", async (t) => {
  const s = await setup(t);
  await writeFile(s.tokenFile, 'istio-cni-token-1');
  const p = await PluginKubeconfig.start(
    loadKubeConfig(s.agentKubeconfig, {}),
    s.pluginFile,
    s.logs.control.scope('plugin-kubeconfig'),
  );
  t.after(() => p.close());
  await eventAfter(p, 'written', () => renew(s.tokenFile, 'istio-cni-token-2'));
  assert.equal((await asPlugin(s.pluginFile)).authorization, 'Bearer istio-cni-token-2');
});

test('the agent waits for its token file, as kubelet starts no container before its projected token exists', async (t) => {
  const s = await setup(t);
  const started = PluginKubeconfig.start(
    loadKubeConfig(s.agentKubeconfig, {}),
    s.pluginFile,
    s.logs.control.scope('plugin-kubeconfig'),
  );
  await s.logs.waitFor(
    'waiting for the token',
    (l) => l['message'] === 'waiting for the service-account token file' && l['tokenFile'] === s.tokenFile,
  );
  await renew(s.tokenFile, 'late-token');
  const p = await started;
  t.after(() => p.close());
  assert.equal((await asPlugin(s.pluginFile)).authorization, 'Bearer late-token');
});

test('an agent run with an inline token (no token file) gives the plugin that token and watches nothing', async (t) => {
  const s = await setup(t);
  const file = path.join(s.dir, 'admin-kubeconfig');
  await writeFile(
    file,
    `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: admin-token}}]
contexts: [{name: x, context: {cluster: c, user: admin}}]
current-context: x
`,
  );
  const p = await PluginKubeconfig.start(
    loadKubeConfig(file, {}),
    s.pluginFile,
    s.logs.control.scope('plugin-kubeconfig'),
  );
  p.close();
  const plugin = await asPlugin(s.pluginFile);
  assert.equal(plugin.authorization, 'Bearer admin-token');
  assert.equal(plugin.kc.getCurrentCluster()?.skipTLSVerify, true);
});

test('a token file in a directory that does not exist is a configuration error naming the file, not a wait', async (t) => {
  const s = await setup(t);
  const file = path.join(s.dir, 'elsewhere-kubeconfig');
  const missing = path.join(s.dir, 'no-such-dir', 'token');
  await writeFile(
    file,
    tokenFileKubeconfig(
      { name: 'amesh', server: 'https://127.0.0.1:6443', skipTLSVerify: false },
      'istio-cni',
      missing,
    ),
  );
  await assert.rejects(
    PluginKubeconfig.start(loadKubeConfig(file, {}), s.pluginFile, s.logs.control.scope('plugin-kubeconfig')),
    (e) => isMeshError(e, 'AMESH_ERR_CONFIG') && e.message.includes(missing),
  );
});
