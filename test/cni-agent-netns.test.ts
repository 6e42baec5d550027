/**
 * The node agent as root with its real parts, in throwaway network namespaces: the CNI plugin (bin/amesh-cni, run
 * as a runtime runs it) hands a pod to the agent, which applies Istio's rules in the pod's netns, puts its IP in the
 * probe ipset of a throwaway "node" netns, and sends ZDS Add with the pod's netns to a ZDS peer (amesh's ztunnel-side
 * client with a recording runner); a running pod is enrolled and un-enrolled by its label; the ADD is refused
 * (the plugin fails closed) when the agent is down or ztunnel is not connected, and the pod is then `pending` with
 * an Event. The agent as a process installs the plugin into the node's CNI dirs and removes it at SIGTERM.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import readline from 'node:readline';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { loadCniAgentConfig, type CniAgentConfig } from '../src/cni/agent/cni-agent-config.js';
import { CniAgent } from '../src/cni/agent/cni-agent.js';
import { HostProbeRules, PROBE_IPSET_V4 } from '../src/cni/agent/host-rules.js';
import { PodNetnsCache } from '../src/cni/agent/netns-cache.js';
import { PodRules } from '../src/cni/agent/pod-rules.js';
import { ZtunnelServer } from '../src/cni/agent/ztunnel-server.js';
import { netnsId } from '../src/native/native.js';
import { ZdsClient } from '../src/ztunnel/inpod/zds-client.js';
import { ameshCommand } from '../src/up/amesh-command.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { BRIDGE_RESULT, pluginNetworkConfig } from './helpers/cni-network-config.js';
import { startApiServer } from './helpers/in-process.js';
import { waitFor } from './helpers/mesh-fixture.js';
import { TestNetns, mustRun, netnsSkip } from './helpers/netns.js';
import { RecordingRunner } from './helpers/recording-runner.js';
import { runCniPlugin, type PluginRun } from './helpers/run-cni-plugin.js';
import { packageRoot } from '../src/lib/package-root.js';

const REPO = packageRoot();
const EXECUTABLE = path.join(REPO, 'bin', 'amesh-cni');
const NODE = 'node-93';
const LOOPBACK = '127.96.0.2';
const MONITORING_PORT = 15014;
const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const skip = netnsSkip();

/** The CNI environment a runtime gives a pod sandbox's ADD. */
const addEnv = (netns: string, namespace: string, name: string): Record<string, string> => ({
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: `c-${name}`,
  CNI_NETNS: netns,
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
  CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${namespace};K8S_POD_NAME=${name};K8S_POD_INFRA_CONTAINER_ID=c-${name}`,
});

const prevResult = (ip: string): Record<string, unknown> => ({
  ...BRIDGE_RESULT,
  ips: [{ interface: 2, address: `${ip}/24`, gateway: '10.93.0.1' }],
});

/** A pod's netns (added to `made` at once, for removal): loopback up and an eth0 (one end of a veth pair kept inside) with the pod's IP. */
async function podNetns(ip: string, made: TestNetns[]): Promise<TestNetns> {
  const ns = await TestNetns.create();
  made.push(ns);
  await ns.exec('ip', ['link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'peer0']);
  await ns.exec('ip', ['addr', 'add', `${ip}/24`, 'dev', 'eth0']);
  await ns.exec('ip', ['link', 'set', 'eth0', 'up']);
  return ns;
}

const sameNetns = (fd: number, nsPath: string): boolean => {
  const other = openSync(nsPath, 'r');
  try {
    const a = netnsId(fd);
    const b = netnsId(other);
    return a.dev === b.dev && a.ino === b.ino;
  } finally {
    closeSync(other);
  }
};

describe('amesh cni-agent with its real parts, as root in throwaway network namespaces', { skip }, () => {
  let dir: string;
  let api: ApiServer;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let nodeNs: TestNetns;
  let cfg: CniAgentConfig;
  let agent: CniAgent | undefined;
  let ztunnel: ZdsClient | undefined;
  let runner: RecordingRunner;
  const pods: TestNetns[] = [];
  const processes: ChildProcess[] = [];
  const logs = new CapturedLogs('cni-agent', 'debug');

  const startAgent = async (): Promise<CniAgent> => {
    return CniAgent.start(
      cfg,
      kc,
      {
        rules: new PodRules(cfg),
        hostProbes: new HostProbeRules(cfg, nodeNs.path),
        netns: new PodNetnsCache(),
        zdsServer: (socket, snapshot, log, metrics) => new ZtunnelServer(socket, snapshot, log, { metrics }),
      },
      logs.control,
    );
  };
  const connectZtunnel = async (): Promise<void> => {
    runner = new RecordingRunner();
    ztunnel = new ZdsClient(cfg.ztunnelSocket, runner, logs.control.scope('ztunnel'));
    ztunnel.start();
    await waitFor('ztunnel ready', () => ztunnel?.ready === true);
  };
  const annotation = async (namespace: string, name: string): Promise<string | undefined> =>
    (await core.readNamespacedPod({ name, namespace })).metadata?.annotations?.['ambient.istio.io/redirection'];
  const createPod = async (
    namespace: string,
    name: string,
    ip: string,
    labels: Record<string, string> = {},
  ): Promise<string> => {
    const p = await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name, namespace, labels },
        spec: { nodeName: NODE, containers: [{ name: 'app', image: 'x' }] },
      },
    });
    await core.patchNamespacedPodStatus(
      { name, namespace, body: { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] } } },
      MERGE,
    );
    return p.metadata?.uid ?? '';
  };
  const cniAdd = (ns: TestNetns, namespace: string, name: string, ip: string): Promise<PluginRun> =>
    runCniPlugin(
      EXECUTABLE,
      addEnv(ns.path, namespace, name),
      JSON.stringify(pluginNetworkConfig(cfg.runDir, { prevResult: prevResult(ip) })),
    );
  /** The agent's `ztunnel_connected` gauge, read from its /metrics endpoint. */
  const ztunnelConnected = async (): Promise<string | undefined> => {
    const body = await (await fetch(`http://${LOOPBACK}:${MONITORING_PORT}/metrics`)).text();
    return body.split('\n').find((l) => l.startsWith('ztunnel_connected '));
  };
  const iptablesSave = (ns: TestNetns): Promise<string> => ns.exec('iptables-save', []);
  const probeSet = (): Promise<string> => nodeNs.exec('ipset', ['list', PROBE_IPSET_V4]);

  before(async () => {
    assert.ok(
      existsSync(path.join(REPO, 'dist/bundle/amesh-cni.js')),
      'bin/amesh-cni runs the build: npm run build first',
    );
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-cni-agent-netns-'));
    api = await startApiServer(path.join(dir, 'api'));
    kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespace({
      body: { metadata: { name: 'shop', labels: { 'istio.io/dataplane-mode': 'ambient' } } },
    });
    await core.createNamespace({ body: { metadata: { name: 'web' } } });
    nodeNs = await TestNetns.create();
    cfg = loadCniAgentConfig(
      {
        cniAgentRunDir: path.join(dir, 'run'),
        ztunnelUdsAddress: path.join(dir, 'ztunnel', 'ztunnel.sock'),
        readinessAddress: `${LOOPBACK}:0`,
        monitoringAddress: `${LOOPBACK}:${MONITORING_PORT}`,
      },
      { NODE_NAME: NODE, AMBIENT_IPV6: 'false', CNI_ENABLE_INSTALL: 'false' },
    );
    agent = await startAgent();
    await connectZtunnel();
  });

  after(async () => {
    ztunnel?.close();
    await agent?.stop();
    for (const p of processes) p.kill();
    for (const ns of [...pods, nodeNs]) await ns?.remove().catch(() => undefined);
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('CNI ADD through the plugin: rules in the pod netns, ZDS Add with that netns, probe IP, redirection: enabled', async () => {
    const ns = await podNetns('10.93.0.5', pods);
    const uid = await createPod('shop', 'cart-0', '10.93.0.5');
    const r = await cniAdd(ns, 'shop', 'cart-0', '10.93.0.5');
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.equal(runner.events.includes(`start ${uid}`), true);
    assert.equal(sameNetns(runner.held.get(uid)!, ns.path), true, "ztunnel got the pod's own netns");
    assert.deepEqual(runner.infos.get(uid), { name: 'cart-0', namespace: 'shop', serviceAccount: 'default' });
    const saved = await iptablesSave(ns);
    assert.match(
      saved,
      /-A ISTIO_OUTPUT ! -d 127\.0\.0\.1\/32 -p tcp -m mark ! --mark 0x539\/0xfff -j REDIRECT --to-ports 15001/,
    );
    assert.match(await ns.exec('ip', ['rule']), /32764:\s+from all fwmark 0x111\/0xfff lookup 100/);
    assert.match(await probeSet(), new RegExp(`10\\.93\\.0\\.5 comment "${uid}"`));
    assert.equal(await annotation('shop', 'cart-0'), 'enabled');
  });

  test('a running pod is enrolled by its label and un-enrolled by dataplane-mode=none: rules present, then gone', async () => {
    const ns = await podNetns('10.93.0.6', pods);
    const app = spawn('ip', ['netns', 'exec', ns.name, 'sleep', '600'], { stdio: 'ignore' });
    processes.push(app);
    const uid = await createPod('web', 'front-0', '10.93.0.6');
    await core.patchNamespacedPod(
      { name: 'front-0', namespace: 'web', body: { metadata: { labels: { 'istio.io/dataplane-mode': 'ambient' } } } },
      MERGE,
    );
    await waitFor('front-0 enabled', async () => (await annotation('web', 'front-0')) === 'enabled', 10_000);
    assert.match(await iptablesSave(ns), /ISTIO_PRERT/);
    assert.equal(sameNetns(runner.held.get(uid)!, ns.path), true, 'found under /proc by its IP');
    await core.patchNamespacedPod(
      { name: 'front-0', namespace: 'web', body: { metadata: { labels: { 'istio.io/dataplane-mode': 'none' } } } },
      MERGE,
    );
    await waitFor('front-0 un-enrolled', async () => (await annotation('web', 'front-0')) === undefined, 10_000);
    assert.doesNotMatch(await iptablesSave(ns), /ISTIO_/);
    assert.doesNotMatch(await ns.exec('ip', ['rule']), /lookup 100/);
    await runner.waitFor(`stop ${uid}`);
    assert.doesNotMatch(await probeSet(), /10\.93\.0\.6/);
  });

  test('ztunnel not connected: ztunnel_connected drops to 0, the plugin fails the ADD, the pod is pending with an Event, and ztunnel gets it when it connects', async () => {
    assert.equal(await ztunnelConnected(), 'ztunnel_connected 1');
    ztunnel?.close();
    await waitFor('agent sees ztunnel gone', () => logs.lines.some((l) => l['message'] === 'ztunnel disconnected'));
    assert.equal(await ztunnelConnected(), 'ztunnel_connected 0');
    const ns = await podNetns('10.93.0.7', pods);
    const uid = await createPod('shop', 'late-0', '10.93.0.7');
    const r = await cniAdd(ns, 'shop', 'late-0', '10.93.0.7');
    assert.equal(r.status, 1);
    assert.match(r.stdout, /CNI_ERR_CAPTURE_FAILED.*AGENT_ERR_ZTUNNEL/);
    assert.equal(await annotation('shop', 'late-0'), 'pending');
    const events = (await core.listNamespacedEvent({ namespace: 'shop' })).items.filter(
      (e) => e.involvedObject.name === 'late-0',
    );
    assert.deepEqual(
      events.map((e) => e.reason),
      ['ZtunnelAddFailed'],
    );
    await connectZtunnel();
    assert.equal(await ztunnelConnected(), 'ztunnel_connected 1');
    await waitFor('late-0 enabled', async () => (await annotation('shop', 'late-0')) === 'enabled', 10_000);
    assert.equal(runner.held.has(uid), true);
  });

  test('agent down: the plugin fails the ADD (fail closed)', async () => {
    await agent?.stop();
    agent = undefined;
    const ns = await podNetns('10.93.0.8', pods);
    await createPod('shop', 'orphan-0', '10.93.0.8');
    const r = await cniAdd(ns, 'shop', 'orphan-0', '10.93.0.8');
    assert.equal(r.status, 1);
    assert.match(r.stdout, /CNI_ERR_AGENT_UNAVAILABLE/);
    assert.doesNotMatch(await iptablesSave(ns), /ISTIO_/);
    assert.doesNotMatch(await nodeNs.exec('iptables-save', []), /ISTIO_POSTRT/, 'host probe rules removed at shutdown');
  });
});

describe('amesh cni-agent as a process in a node netns', { skip }, () => {
  test('with Istio env names it becomes ready (host probe rules in, sockets made, plugin installed) and SIGTERM removes the host rules and the plugin', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'amesh-cni-agent-cli-'));
    const node = await TestNetns.create();
    let api: ApiServer | undefined;
    try {
      // The API server listens in this netns; the agent runs in the node's, so it reaches it through a veth pair.
      await mustRun('ip', ['link', 'add', 'amesh93h', 'type', 'veth', 'peer', 'name', 'amesh93n', 'netns', node.name]);
      await mustRun('ip', ['addr', 'add', '10.93.255.1/30', 'dev', 'amesh93h']);
      await mustRun('ip', ['link', 'set', 'amesh93h', 'up']);
      await node.exec('ip', ['addr', 'add', '10.93.255.2/30', 'dev', 'amesh93n']);
      await node.exec('ip', ['link', 'set', 'amesh93n', 'up']);
      api = await startApiServer(path.join(dir, 'api'), { listen: '10.93.255.1:0' });
      const runDir = path.join(dir, 'run');
      // The node's CNI dirs, as the DaemonSet mounts them.
      const netDir = path.join(dir, 'host', 'etc', 'cni', 'net.d');
      const binDir = path.join(dir, 'host', 'opt', 'cni', 'bin');
      await mkdir(netDir, { recursive: true });
      await mkdir(binDir, { recursive: true });
      const conflist = path.join(netDir, '10-bridge.conflist');
      const primary = '{"cniVersion":"1.0.0","name":"cbr0","plugins":[{"type":"bridge","bridge":"cni0"}]}';
      await writeFile(conflist, primary);
      const { cmd, args } = ameshCommand();
      const agent = spawn(
        'ip',
        [
          'netns',
          'exec',
          node.name,
          cmd,
          ...args,
          'cni-agent',
          '--kubeconfig',
          api.kubeconfigPath,
          '--readiness-address',
          '127.0.0.1:0',
          '--monitoring-address',
          '127.0.0.1:0',
        ],
        {
          env: {
            ...process.env,
            NODE_NAME: 'node-93',
            LOG_FORMAT: 'json',
            CNI_AGENT_RUN_DIR: runDir,
            ZTUNNEL_UDS_ADDRESS: path.join(dir, 'zt', 'ztunnel.sock'),
            AMBIENT_IPV6: 'false',
            MOUNTED_CNI_NET_DIR: netDir,
            HOST_CNI_BIN_DIR: binDir,
          },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      const awaited = new Set([
        'CNI ambient server marking ready',
        'the CNI plugin is installed; watching for changes',
      ]);
      const ready = new Promise<void>((resolve, reject) => {
        readline.createInterface({ input: agent.stdout }).on('line', (line) => {
          awaited.delete(String((JSON.parse(line) as { message?: unknown }).message));
          if (awaited.size === 0) resolve();
        });
        agent.once('exit', (code) => reject(new Error(`cni-agent exited ${String(code)} before it was ready`)));
      });
      await ready;
      const plugins = (JSON.parse(await readFile(conflist, 'utf8')) as { plugins: { type: string }[] }).plugins;
      assert.deepEqual(
        plugins.map((p) => p.type),
        ['bridge', 'amesh-cni'],
      );
      assert.equal(existsSync(path.join(binDir, 'amesh-cni')), true);
      assert.match(await node.exec('iptables-save', ['-t', 'nat']), /-A POSTROUTING -j ISTIO_POSTRT/);
      assert.equal(existsSync(path.join(runDir, 'pluginevent.sock')), true);
      assert.equal(existsSync(path.join(runDir, 'istio-cni-kubeconfig')), true);
      assert.equal(existsSync(path.join(dir, 'zt', 'ztunnel.sock')), true);
      agent.kill('SIGTERM');
      const [code] = (await once(agent, 'exit')) as [number | null];
      assert.equal(code, 0);
      assert.doesNotMatch(await node.exec('iptables-save', []), /ISTIO_POSTRT/);
      assert.doesNotMatch(await node.exec('ipset', ['list', '-n']), /istio-inpod-probes/);
      // No DaemonSet to say this is an upgrade: the plugin is uninstalled, the node's config as it was.
      assert.equal(await readFile(conflist, 'utf8'), primary);
      assert.deepEqual(await readdir(binDir), []);
      assert.equal(existsSync(path.join(runDir, 'istio-cni-kubeconfig')), false);
    } finally {
      await mustRun('ip', ['link', 'del', 'amesh93h']).catch(() => undefined);
      await node.remove();
      await api?.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
