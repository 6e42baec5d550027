/**
 * The node agent's installer against a node's CNI dirs (temporary ones here, as the agent's pod sees the host's
 * through hostPath mounts): it waits for the primary network config, copies the plugin and chains it; it repairs
 * the config when another CNI rewrites it and the plugin when it is removed; its cleanup leaves the config as it
 * found it and nothing of its own. The installed plugin then runs as the container runtime runs it, with a PATH
 * that has no node on it: the independent check that what is installed is self-contained. The same installer in the
 * agent process, with SIGTERM, is in cni-agent-netns.test.ts (it needs root).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { constants, existsSync } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { CniInstaller } from '../src/cni/install/cni-installer.js';
import { loadCniInstallConfig, type CniInstallConfig } from '../src/cni/install/install-config.js';
import { PLUGIN_BUNDLE } from '../src/cni/install/plugin-files.js';
import { packageRoot } from '../src/lib/package-root.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { BRIDGE_RESULT, ISTIO_DEFAULT_SELECTORS } from './helpers/cni-network-config.js';
import { runCniPlugin } from './helpers/run-cni-plugin.js';

const BUNDLE = path.join(packageRoot(), PLUGIN_BUNDLE);
const skip = existsSync(BUNDLE) ? false : `the self-contained plugin ${PLUGIN_BUNDLE} is not built (npm run build)`;

/** The node's primary config as a bridge CNI writes it. */
const BRIDGE_CONFLIST = `{
  "cniVersion": "1.0.0",
  "name": "cbr0",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipam": { "type": "host-local", "ranges": [[{ "subnet": "10.244.1.0/24" }]] }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
`;

interface Node {
  readonly dir: string;
  readonly netDir: string;
  readonly binDir: string;
  readonly runDir: string;
  readonly kubeconfig: string;
  readonly logs: CapturedLogs;
  readonly cfg: CniInstallConfig;
  readonly installer: CniInstaller;
  /** The first log line `message` written from now on. */
  next(message: string): Promise<Record<string, unknown>>;
}

/** Writes a file as a CNI's agent does: whole, then renamed into place. */
async function writeAsAnotherCni(file: string, text: string): Promise<void> {
  await writeFile(`${file}.incoming`, text);
  await rename(`${file}.incoming`, file);
}

async function node(env: Record<string, string> = {}): Promise<Node> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-cni-install-'));
  const netDir = path.join(dir, 'host', 'etc', 'cni', 'net.d');
  const binDir = path.join(dir, 'host', 'opt', 'cni', 'bin');
  const runDir = path.join(dir, 'run');
  await mkdir(netDir, { recursive: true });
  await mkdir(binDir, { recursive: true });
  await mkdir(runDir);
  // Another CNI's binary, which the installer must leave alone.
  await writeFile(path.join(binDir, 'bridge'), '#!/bin/sh\n', { mode: 0o755 });
  const kubeconfig = path.join(runDir, 'istio-cni-kubeconfig');
  await writeFile(kubeconfig, '{}');
  const cfg = loadCniInstallConfig(
    { MOUNTED_CNI_NET_DIR: netDir, HOST_CNI_BIN_DIR: binDir, AMESH_CNI_PLUGIN_BUNDLE: BUNDLE, ...env },
    {
      runDir,
      podNamespace: 'istio-system',
      excludeNamespaces: ['kube-system'],
      enablementSelectors: ISTIO_DEFAULT_SELECTORS,
      logLevel: 'info',
    },
  )!;
  const logs = new CapturedLogs('cni-agent', 'debug');
  const installer = new CniInstaller(cfg, kubeconfig, logs.control.scope('install'));
  const next = (message: string): Promise<Record<string, unknown>> => {
    const from = logs.lines.length;
    return logs.waitFor(message, (l) => l['message'] === message && logs.lines.indexOf(l) >= from);
  };
  return { dir, netDir, binDir, runDir, kubeconfig, logs, cfg, installer, next };
}

const INSTALLED = 'the CNI plugin is installed; watching for changes';

const pluginsOf = async (file: string): Promise<Record<string, unknown>[]> =>
  (JSON.parse(await readFile(file, 'utf8')) as { plugins: Record<string, unknown>[] }).plugins;

const sameBytes = async (a: string, b: string): Promise<boolean> => (await readFile(a)).equals(await readFile(b));

describe('the CNI installer on a node with a bridge CNI', { skip }, () => {
  let n: Node;
  let conflist: string;

  before(async () => {
    n = await node();
  });
  after(async () => {
    await n.installer.stop();
    await rm(n.dir, { recursive: true, force: true });
  });

  test('waits for the primary config, then copies the plugin and chains it last, leaving the rest as written', async () => {
    const waiting = n.next('waiting for the primary CNI network config to be written');
    const installed = n.next(INSTALLED);
    n.installer.start();
    await waiting;
    assert.equal(n.installer.ready, false);
    conflist = path.join(n.netDir, '10-bridge.conflist');
    await writeAsAnotherCni(conflist, BRIDGE_CONFLIST);
    await installed;
    assert.equal(n.installer.ready, true);

    const launcher = path.join(n.binDir, 'amesh-cni');
    await access(launcher, constants.X_OK);
    assert.equal(await sameBytes(path.join(n.binDir, 'amesh-cni.d', 'node'), process.execPath), true);
    assert.equal(await sameBytes(path.join(n.binDir, 'amesh-cni.d', 'amesh-cni.mjs'), BUNDLE), true);

    const text = await readFile(conflist, 'utf8');
    const end = '\n  ]\n}\n';
    assert.ok(text.startsWith(BRIDGE_CONFLIST.slice(0, -end.length)), 'the config up to its last plugin is unchanged');
    assert.ok(text.endsWith(end));
    assert.deepEqual(
      (await pluginsOf(conflist)).map((p) => p['type']),
      ['bridge', 'portmap', 'amesh-cni'],
    );
    assert.deepEqual((await pluginsOf(conflist))[2], n.cfg.entry);
  });

  test('a config rewritten by another CNI without our entry is chained again', async () => {
    const rewritten = n.next('wrote CNI config');
    const installed = n.next(INSTALLED);
    await writeAsAnotherCni(conflist, BRIDGE_CONFLIST);
    await rewritten;
    await installed;
    assert.deepEqual((await pluginsOf(conflist)).at(-1), n.cfg.entry);
  });

  test('a removed or altered plugin file is put back', async () => {
    const copied = n.next('copied the CNI plugin file');
    const installed = n.next(INSTALLED);
    await rm(path.join(n.binDir, 'amesh-cni'));
    await copied;
    await installed;
    await access(path.join(n.binDir, 'amesh-cni'), constants.X_OK);

    const module = path.join(n.binDir, 'amesh-cni.d', 'amesh-cni.mjs');
    const recopied = n.next('copied the CNI plugin file');
    const again = n.next(INSTALLED);
    await writeFile(module, 'broken');
    await recopied;
    await again;
    assert.equal(await sameBytes(module, BUNDLE), true);
  });

  test('the installed plugin runs as the runtime runs it, with no node on PATH', async () => {
    const launcher = path.join(n.binDir, 'amesh-cni');
    const version = await runCniPlugin(launcher, { PATH: '/nonexistent', CNI_COMMAND: 'VERSION' }, '');
    assert.equal(version.status, 0, version.stderr);
    assert.ok((JSON.parse(version.stdout) as { supportedVersions: string[] }).supportedVersions.includes('1.0.0'));

    // An ADD as the runtime makes it from the installed list: our entry with the list's name and version, and the
    // bridge's result. A pod in an excluded namespace is passed through without the agent.
    const list = JSON.parse(await readFile(conflist, 'utf8')) as { name: string; cniVersion: string };
    const add = await runCniPlugin(
      launcher,
      {
        PATH: '/nonexistent',
        CNI_COMMAND: 'ADD',
        CNI_CONTAINERID: 'c-coredns',
        CNI_NETNS: '/var/run/netns/cni-test-absent',
        CNI_IFNAME: 'eth0',
        CNI_PATH: n.binDir,
        CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=kube-system;K8S_POD_NAME=coredns-0',
      },
      JSON.stringify({ ...n.cfg.entry, name: list.name, cniVersion: list.cniVersion, prevResult: BRIDGE_RESULT }),
    );
    assert.equal(add.status, 0, add.stderr);
    assert.deepEqual((JSON.parse(add.stdout) as { ips: unknown }).ips, BRIDGE_RESULT.ips);
  });

  test('cleanup gives the config back as it was and leaves nothing of ours', async () => {
    await n.installer.stop();
    await n.installer.cleanup();
    assert.equal(await readFile(conflist, 'utf8'), BRIDGE_CONFLIST);
    assert.deepEqual(await readdir(n.binDir), ['bridge']);
    assert.deepEqual(await readdir(n.netDir), ['10-bridge.conflist']);
    assert.deepEqual(await readdir(n.runDir), []);
  });
});

describe('the CNI installer with other primary configs', { skip }, () => {
  const nodes: Node[] = [];
  const start = async (env: Record<string, string> = {}): Promise<Node> => {
    const made = await node(env);
    nodes.push(made);
    return made;
  };
  after(async () => {
    for (const made of nodes) {
      await made.installer.stop();
      await rm(made.dir, { recursive: true, force: true });
    }
  });

  test('a .conf is converted to a .conflist with our entry, keeping its file mode', async () => {
    const n = await start();
    const conf = path.join(n.netDir, '10-bridge.conf');
    await writeFile(conf, '{"cniVersion":"0.4.0","name":"dbnet","type":"bridge","bridge":"cni0"}', { mode: 0o644 });
    const installed = n.next(INSTALLED);
    n.installer.start();
    await installed;
    assert.deepEqual(await readdir(n.netDir), ['10-bridge.conflist']);
    const list = path.join(n.netDir, '10-bridge.conflist');
    assert.equal((await stat(list)).mode & 0o777, 0o644);
    assert.deepEqual(
      (await pluginsOf(list)).map((p) => p['type']),
      ['bridge', 'amesh-cni'],
    );
  });

  test('a config that is already right is not rewritten; a new one loaded before it is chained too', async () => {
    const n = await start();
    const primary = path.join(n.netDir, '10-bridge.conflist');
    await writeFile(primary, BRIDGE_CONFLIST);
    let installed = n.next(INSTALLED);
    n.installer.start();
    await installed;
    const chained = await readFile(primary, 'utf8');
    const firstWrite = (await stat(primary)).mtimeMs;

    // Restarted (an agent upgrade): the config is found right and left alone.
    await n.installer.stop();
    const again = new CniInstaller(n.cfg, n.kubeconfig, n.logs.control.scope('install'));
    const leftAlone = n.next('the CNI config already chains the plugin');
    installed = n.next(INSTALLED);
    again.start();
    await leftAlone;
    await installed;
    assert.equal((await stat(primary)).mtimeMs, firstWrite);

    // Another CNI becomes the primary one: the plugin follows it.
    const cilium = path.join(n.netDir, '05-cilium.conflist');
    const moved = n.next('wrote CNI config');
    installed = n.next(INSTALLED);
    await writeAsAnotherCni(cilium, '{"cniVersion":"0.3.1","name":"cilium","plugins":[{"type":"cilium-cni"}]}');
    assert.equal((await moved)['file'], cilium);
    await installed;
    assert.deepEqual(
      (await pluginsOf(cilium)).map((p) => p['type']),
      ['cilium-cni', 'amesh-cni'],
    );
    assert.equal(await readFile(primary, 'utf8'), chained);
    await again.stop();
  });

  test('a CNI_CONF_NAME config that is not JSON is an error naming it, not a crash, and is chained once fixed', async () => {
    const n = await start({ CNI_CONF_NAME: '10-flannel.conflist' });
    const file = path.join(n.netDir, '10-flannel.conflist');
    await writeFile(file, '{"name": "cbr0", "plugins": [');
    const failed = n.logs.waitFor(
      'an install error',
      (l) => l['message']?.toString().startsWith('cannot install') === true,
    );
    n.installer.start();
    assert.match(String((await failed)['error']), /AGENT_ERR_CNI_CONFIG: .*10-flannel\.conflist: is not JSON/);
    assert.equal(n.installer.ready, false);
    const installed = n.next(INSTALLED);
    await writeAsAnotherCni(file, '{"name":"cbr0","cniVersion":"0.3.1","plugins":[{"type":"flannel"}]}');
    await installed;
    assert.ok(isDeepStrictEqual((await pluginsOf(file)).at(-1), n.cfg.entry));
  });

  test('standalone (CHAINED_CNI_PLUGIN=false): our own config file, removed at cleanup', async () => {
    const n = await start({ CHAINED_CNI_PLUGIN: 'false' });
    const installed = n.next(INSTALLED);
    n.installer.start();
    await installed;
    const own = path.join(n.netDir, 'YYY-istio-cni.conf');
    assert.equal((JSON.parse(await readFile(own, 'utf8')) as { type: string }).type, 'amesh-cni');
    assert.equal((await stat(own)).mode & 0o777, 0o600);
    await n.installer.stop();
    await n.installer.cleanup();
    assert.deepEqual(await readdir(n.netDir), []);
  });
});
