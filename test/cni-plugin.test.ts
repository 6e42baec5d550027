import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { startApiServer } from './helpers/in-process.js';
import { BRIDGE_RESULT, pluginNetworkConfig } from './helpers/cni-network-config.js';
import { PluginEventServer } from './helpers/plugin-event-server.js';
import { runCniPlugin, type PluginRun } from './helpers/run-cni-plugin.js';
import { runToExit } from './helpers/run-to-exit.js';
import { packageRoot } from '../src/lib/package-root.js';

const REPO = packageRoot();
const EXECUTABLE = path.join(REPO, 'bin', 'amesh-cni');
const AMBIENT = { 'istio.io/dataplane-mode': 'ambient' };
/** Debian's containernetworking-plugins. */
const CNI_PLUGINS = '/usr/lib/cni';

/** `false` when the chained-plugin test can run here, else why it is skipped. */
function chainSkip(): string | false {
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  if (!existsSync(path.join(CNI_PLUGINS, 'bridge')))
    return `no ${CNI_PLUGINS}/bridge: install Debian's containernetworking-plugins`;
  return false;
}

/** The CNI environment containerd gives a pod sandbox's ADD. */
const addEnv = (namespace: string, name: string): Record<string, string> => ({
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: '3c41e946cf17a327',
  CNI_NETNS: '/var/run/netns/cni-1234',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
  CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${namespace};K8S_POD_NAME=${name};K8S_POD_INFRA_CONTAINER_ID=3c41e946cf17a327;K8S_POD_UID=a09038c7`,
});

/** A failed run as the CNI spec wants it: non-zero exit, one error result on stdout, and no stack trace anywhere. */
function assertCniError(r: PluginRun, code: number, details: RegExp): void {
  assert.equal(r.status, 1, r.stderr);
  const result = JSON.parse(r.stdout) as Record<string, unknown>;
  assert.deepEqual(Object.keys(result), ['cniVersion', 'code', 'msg', 'details']);
  assert.equal(result['code'], code, String(result['details']));
  assert.match(String(result['details']), details);
  assert.doesNotMatch(r.stdout + r.stderr, /\n\s+at /, 'no stack trace');
}

describe('amesh-cni run as a container runtime runs it', () => {
  let dir: string;
  let runDir: string;
  let api: ApiServer;
  let agent: PluginEventServer;
  const config = (over: Record<string, unknown> = {}): string => JSON.stringify(pluginNetworkConfig(runDir, over));

  before(async () => {
    assert.ok(
      existsSync(path.join(REPO, 'dist/bundle/amesh-cni.js')),
      'bin/amesh-cni runs the build: npm run build first',
    );
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-cni-'));
    runDir = path.join(dir, 'run');
    await mkdir(runDir);
    api = await startApiServer(path.join(dir, 'api'));
    // The node agent writes this kubeconfig for the plugin (istio cni/pkg/plugin/kubernetes.go reads it).
    await copyFile(api.kubeconfigPath, path.join(runDir, 'istio-cni-kubeconfig'));
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const spec = { containers: [{ name: 'app', image: 'app' }] };
    await core.createNamespace({ body: { metadata: { name: 'shop', labels: AMBIENT } } });
    await core.createNamespace({ body: { metadata: { name: 'plain' } } });
    await core.createNamespacedPod({ namespace: 'shop', body: { metadata: { name: 'web-0' }, spec } });
    await core.createNamespacedPod({
      namespace: 'shop',
      body: { metadata: { name: 'node-exporter' }, spec: { ...spec, hostNetwork: true } },
    });
    await core.createNamespacedPod({
      namespace: 'plain',
      body: { metadata: { name: 'labelled', labels: AMBIENT }, spec },
    });
    await core.createNamespacedPod({ namespace: 'plain', body: { metadata: { name: 'unlabelled' }, spec } });
    agent = await PluginEventServer.start(runDir);
  });
  after(async () => {
    // Optional: a failed `before` leaves them unset, and the API server must still stop or the run never ends.
    await agent?.stop();
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test("ADD of a pod in an ambient namespace posts Istio's /cmdadd body and prints prevResult", async () => {
    const before = agent.bodies.length;
    const r = await runCniPlugin(EXECUTABLE, addEnv('shop', 'web-0'), config());
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), BRIDGE_RESULT);
    assert.deepEqual(agent.bodies.slice(before), [
      '{"Netns":"/var/run/netns/cni-1234","PodName":"web-0","PodNamespace":"shop","IPs":[{"Interface":2,"Address":{"IP":"10.244.1.5","Mask":"////AA=="},"Gateway":"10.244.1.1"}]}',
    ]);
  });

  test('ADD of a pod labelled ambient in a plain namespace is captured too', async () => {
    const before = agent.bodies.length;
    const r = await runCniPlugin(EXECUTABLE, addEnv('plain', 'labelled'), config());
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.equal(agent.bodies.length, before + 1);
  });

  test('ADD of a pod that is not enrolled, on the host network or in an excluded namespace posts nothing and prints prevResult', async () => {
    const before = agent.bodies.length;
    for (const [ns, name] of [
      ['plain', 'unlabelled'],
      ['shop', 'node-exporter'],
      ['kube-system', 'coredns-0'],
    ] as const) {
      const r = await runCniPlugin(EXECUTABLE, addEnv(ns, name), config());
      assert.equal(r.status, 0, `${ns}/${name}: ${r.stdout}${r.stderr}`);
      assert.deepEqual(JSON.parse(r.stdout), BRIDGE_RESULT);
    }
    assert.equal(agent.bodies.length, before, 'nothing posted');
  });

  test('ADD with no prevResult prints an empty result of the config version', async () => {
    const r = await runCniPlugin(
      EXECUTABLE,
      addEnv('plain', 'unlabelled'),
      config({ prevResult: undefined, cniVersion: '0.4.0' }),
    );
    assert.deepEqual([r.status, JSON.parse(r.stdout)], [0, { cniVersion: '0.4.0' }]);
  });

  test('the agent answering 500 fails the ADD (fail closed) with its message', async () => {
    agent.status = 500;
    agent.message = 'failed to add pod to mesh: no ztunnel connection';
    try {
      assertCniError(
        await runCniPlugin(EXECUTABLE, addEnv('shop', 'web-0'), config()),
        100,
        /^CNI_ERR_CAPTURE_FAILED: .*did not capture pod shop\/web-0: 500 failed to add pod to mesh: no ztunnel connection$/,
      );
    } finally {
      agent.status = 200;
      agent.message = '';
    }
  });

  test('no agent socket fails the ADD of an enrolled pod (code 11) but not of a pod that is not to be captured', async () => {
    const elsewhere = path.join(dir, 'no-agent');
    await mkdir(elsewhere, { recursive: true });
    await copyFile(api.kubeconfigPath, path.join(elsewhere, 'istio-cni-kubeconfig'));
    const noAgent = JSON.stringify(pluginNetworkConfig(elsewhere));
    assertCniError(
      await runCniPlugin(EXECUTABLE, addEnv('shop', 'web-0'), noAgent),
      11,
      /^CNI_ERR_AGENT_UNAVAILABLE: .*no-agent\/pluginevent\.sock: the socket does not exist/,
    );
    const skipped = await runCniPlugin(EXECUTABLE, addEnv('plain', 'unlabelled'), noAgent);
    assert.equal(skipped.status, 0, skipped.stdout);
  });

  test('a pod the API does not have fails the ADD (code 11): it cannot be shown not to need capture', async () => {
    assertCniError(
      await runCniPlugin(EXECUTABLE, addEnv('shop', 'gone'), config()),
      11,
      /^CNI_ERR_KUBE_API: cannot read pod shop\/gone from the Kubernetes API .*404 NotFound/,
    );
  });

  test('DEL succeeds with no output even when the agent, the API kubeconfig and the netns are all gone, and with no prevResult', async () => {
    const gone = JSON.stringify(pluginNetworkConfig(path.join(dir, 'nothing-here')));
    for (const stdin of [gone, config({ prevResult: undefined })]) {
      const r = await runCniPlugin(
        EXECUTABLE,
        {
          CNI_COMMAND: 'DEL',
          CNI_CONTAINERID: '3c41e946cf17a327',
          CNI_IFNAME: 'eth0',
          CNI_NETNS: '/var/run/netns/gone',
        },
        stdin,
      );
      assert.deepEqual([r.status, r.stdout], [0, '']);
    }
  });

  test('CHECK succeeds with no output', async () => {
    const r = await runCniPlugin(EXECUTABLE, { ...addEnv('shop', 'web-0'), CNI_COMMAND: 'CHECK' }, config());
    assert.deepEqual([r.status, r.stdout], [0, '']);
  });

  test('VERSION prints the versions amesh-cni speaks', async () => {
    const r = await runCniPlugin(EXECUTABLE, { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.0.0"}');
    assert.equal(r.status, 0);
    assert.deepEqual(JSON.parse(r.stdout), {
      cniVersion: '1.0.0',
      supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
    });
  });

  test('garbage on stdin and a missing CNI_COMMAND are CNI error results, not crashes', async () => {
    assertCniError(
      await runCniPlugin(EXECUTABLE, addEnv('shop', 'web-0'), 'not json at all'),
      6,
      /^CNI_ERR_DECODE: the network config on stdin is not JSON/,
    );
    assertCniError(await runCniPlugin(EXECUTABLE, addEnv('shop', 'web-0'), ''), 6, /^CNI_ERR_DECODE/);
    const noCommand = addEnv('shop', 'web-0');
    delete noCommand['CNI_COMMAND'];
    assertCniError(
      await runCniPlugin(EXECUTABLE, noCommand, config()),
      4,
      /^CNI_ERR_ENV: required environment variable CNI_COMMAND is missing/,
    );
    assertCniError(
      await runCniPlugin(
        EXECUTABLE,
        addEnv('shop', 'web-0'),
        config({ enablement_selectors: [{ podSelector: { matchExpressions: [{ key: 'k', operator: 'Gt' }] } }] }),
      ),
      7,
      /"enablement_selectors\[0\]\.podSelector\.matchExpressions\[0\]\.operator"/,
    );
  });

  test(
    'chained after bridge and host-local in a throwaway node netns: the agent gets the IP the pod netns has; DEL releases it',
    { skip: chainSkip() },
    async () => {
      const tag = String(process.pid);
      const [node, pod] = [`amesh-cni-node-${tag}`, `amesh-cni-pod-${tag}`];
      const ip = async (...args: string[]): Promise<string> => {
        const r = await runToExit('ip', args, 10_000);
        assert.equal(r.status, 0, `ip ${args.join(' ')}: ${r.stderr}`);
        return r.stdout;
      };
      const ipamDir = path.join(dir, 'ipam');
      const bridge = {
        cniVersion: '1.0.0',
        name: 'k8s-pod-network',
        type: 'bridge',
        bridge: 'amesh-br0',
        isGateway: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: '10.244.7.0/24' }]],
          dataDir: ipamDir,
          routes: [{ dst: '0.0.0.0/0' }],
        },
      };
      const env = { ...addEnv('shop', 'web-0'), CNI_NETNS: `/run/netns/${pod}`, CNI_PATH: CNI_PLUGINS };
      const inNode = ['ip', 'netns', 'exec', node];
      await ip('netns', 'add', node);
      try {
        await ip('netns', 'add', pod);
        // bridge and host-local change the node's network, so they run in the node netns; amesh-cni touches no network
        // and must reach the API server on this netns' loopback, so it runs here, on the same pod netns path.
        const first = await runCniPlugin(path.join(CNI_PLUGINS, 'bridge'), env, JSON.stringify(bridge), inNode);
        assert.equal(first.status, 0, first.stdout + first.stderr);
        const prevResult = JSON.parse(first.stdout) as { ips: { address: string }[] };
        const before = agent.bodies.length;
        const ours = await runCniPlugin(EXECUTABLE, env, config({ prevResult }));
        assert.equal(ours.status, 0, ours.stdout + ours.stderr);
        assert.deepEqual(JSON.parse(ours.stdout), prevResult);
        const [address] = (
          JSON.parse(await ip('-n', pod, '-j', 'addr', 'show', 'eth0')) as {
            addr_info: { family: string; local: string; prefixlen: number }[];
          }[]
        )[0]!.addr_info.filter((a) => a.family === 'inet');
        const event = JSON.parse(agent.bodies[before]!) as {
          Netns: string;
          IPs: { Address: { IP: string; Mask: string }; Gateway: string }[];
        };
        assert.equal(event.Netns, `/run/netns/${pod}`);
        assert.deepEqual(
          event.IPs.map((i) => [i.Address.IP, i.Address.Mask, i.Gateway]),
          [[address!.local, '////AA==', '10.244.7.1']],
        );
        // DEL runs the chain in reverse; host-local then frees the address.
        const del = { ...env, CNI_COMMAND: 'DEL' };
        assert.equal((await runCniPlugin(EXECUTABLE, del, config({ prevResult }))).status, 0);
        const released = await runCniPlugin(
          path.join(CNI_PLUGINS, 'bridge'),
          del,
          JSON.stringify({ ...bridge, prevResult }),
          inNode,
        );
        assert.equal(released.status, 0, released.stdout + released.stderr);
        assert.equal(
          existsSync(path.join(ipamDir, 'k8s-pod-network', address!.local)),
          false,
          'the address is free again',
        );
      } finally {
        // Deleting the namespaces takes the bridge and veth pair with them.
        await runToExit('ip', ['netns', 'del', pod], 10_000);
        await runToExit('ip', ['netns', 'del', node], 10_000);
      }
      assert.doesNotMatch(await ip('netns', 'list'), new RegExp(`amesh-cni-(node|pod)-${tag}`), 'nothing left behind');
    },
  );

  test('a runtime finds it by name through a symlink in its CNI_PATH directory', async () => {
    const cniBin = path.join(dir, 'opt-cni-bin');
    await mkdir(cniBin, { recursive: true });
    await symlink(EXECUTABLE, path.join(cniBin, 'amesh-cni'));
    const r = await runCniPlugin(
      path.join(cniBin, 'amesh-cni'),
      { CNI_COMMAND: 'VERSION', CNI_PATH: cniBin },
      '{"cniVersion":"0.4.0"}',
    );
    assert.deepEqual([r.status, (JSON.parse(r.stdout) as { cniVersion: string }).cniVersion], [0, '0.4.0']);
  });
});
