/**
 * `amesh up` as a user runs it, inside a throwaway network namespace standing in for the host (entered with
 * `nsenter --net`, so the namespaces `up` mounts are visible to `amesh exec` as on a host): two nodes, pods
 * from a Deployment spread over them with IPs from their node's pod CIDR, reaching each other across nodes;
 * readiness probes (tcpSocket and exec) driving Ready; a container restarted by its restartPolicy; kubectl,
 * `amesh exec` and `amesh logs` on the result; and teardown (Ctrl-C, or `amesh down` after a crash) leaving no
 * namespace, link, route, iptables rule, ipset or process behind.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  amesh,
  assertTornDown,
  hostState,
  killContainer,
  launchUp,
  removeCluster,
  upSkip,
  type HostState,
  type LaunchedUp,
  type UpTable,
} from './helpers/amesh-up.js';
import { commandPod, deployment, namespaces, nodeEchoCommand, object } from './helpers/manifests.js';
import { waitFor } from './helpers/mesh-fixture.js';
import { TestNetns } from './helpers/netns.js';
import { runToExit } from './helpers/run-to-exit.js';
import { ameshCommand } from '../src/up/amesh-command.js';

const skip = upSkip;
const NS = 'demo';

const idle = (marker: string): string => `/* ${marker} */ setInterval(() => undefined, 1e6)`;

/** The echo Service's ClusterIP, in the default service range. */
const ECHO_VIP = '10.96.0.80';

/**
 * A small cluster description: a 2-replica TCP echo Deployment with its Service, a pod whose container crashes
 * once, and a broken file.
 */
async function writeManifests(dir: string, marker: string, crashFile: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'broken.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: [name\n');
  await writeFile(
    path.join(dir, 'app.yaml'),
    namespaces(NS) +
      deployment({
        name: 'echo',
        namespace: NS,
        replicas: 2,
        container: {
          name: 'echo',
          command: nodeEchoCommand(8080, marker),
          ports: { tcp: 8080 },
          readinessProbe: { tcpSocket: { port: 'tcp' }, periodSeconds: 1 },
        },
      }) +
      object({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'echo', namespace: NS },
        spec: { clusterIP: ECHO_VIP, selector: { app: 'echo' }, ports: [{ port: 80, targetPort: 'tcp' }] },
      }) +
      object({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'echo-lb', namespace: NS },
        spec: { type: 'LoadBalancer', selector: { app: 'echo' }, ports: [{ port: 7070, targetPort: 'tcp' }] },
      }) +
      `---\n${JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'imageonly', namespace: NS }, spec: { containers: [{ name: 'app', image: 'nginx' }] } })}\n` +
      commandPod({
        name: 'crashy',
        namespace: NS,
        container: {
          name: 'app',
          command: [
            'node',
            '-e',
            `const fs = require('fs'); if (!fs.existsSync('${crashFile}')) { fs.writeFileSync('${crashFile}', ''); console.log('crashing'); process.exit(3); } ${idle(marker)}`,
          ],
        },
      }),
  );
}

describe('amesh up: a two-node cluster in a throwaway host namespace', { skip }, () => {
  const id = randomBytes(3).toString('hex');
  const cluster = `u${id}`;
  const marker = `amesh-up-test-${id}`;
  let host: TestNetns;
  let dir: string;
  let dataDir: string;
  let readyFile: string;
  let before_: HostState;
  let launched: LaunchedUp | undefined;
  let table: UpTable;
  const kubectl = (...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> =>
    runToExit(
      'nsenter',
      [`--net=${host.path}`, '--', 'kubectl', '--kubeconfig', path.join(dataDir, 'kubeconfig'), ...args],
      30_000,
    );
  const echoPods = (): UpTable['pods'] => table.pods.filter((p) => p.name.startsWith('echo-'));
  /** Runs a Node.js script in a container of `pod` (of NS) with `amesh exec`. */
  const nodeIn = (pod: string, script: string): ReturnType<typeof amesh> =>
    amesh(host, 'exec', '--data-dir', dataDir, `${NS}/${pod}`, '--', 'node', '-e', script);

  before(async () => {
    host = await TestNetns.create();
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-up-'));
    dataDir = path.join(dir, 'data');
    readyFile = path.join(dir, 'ready');
    await writeManifests(path.join(dir, 'manifests'), marker, path.join(dir, 'crashed'));
    before_ = await hostState(host, cluster, marker);
    launched = launchUp(host, [
      '--config-dir',
      path.join(dir, 'manifests'),
      '--data-dir',
      dataDir,
      '--name',
      cluster,
      '--dataplane',
      'none',
    ]);
    table = await launched.ready;
  });

  after(async () => {
    await removeCluster(launched, host, dataDir);
    await host.remove();
    await rm(dir, { recursive: true, force: true });
  });

  test("up prints progress, then two Ready nodes with their pod CIDRs and the Deployment's pods spread over both, each with an IP from its node's CIDR", () => {
    assert.match(launched!.stderr(), /Creating node node1: network namespace u\w+-node1/);
    assert.deepEqual(
      table.nodes.map((n) => [n.name, n.status, n.podCIDR]),
      [
        ['node1', 'Ready', '10.244.0.0/24'],
        ['node2', 'Ready', '10.244.1.0/24'],
      ],
    );
    const echo = echoPods();
    assert.equal(echo.length, 2);
    assert.deepEqual(echo.map((p) => p.node).sort(), ['node1', 'node2']);
    for (const p of echo) {
      assert.equal(p.status, 'Running');
      assert.equal(p.ready, '1/1', 'the tcpSocket readiness probe passed');
      assert.ok(p.ip.startsWith(p.node === 'node1' ? '10.244.0.' : '10.244.1.'), `${p.name} ${p.ip} on ${p.node}`);
    }
  });

  test('a document the config dir refuses reaches the console as one line led by its file:line, and the count of applied objects says so', () => {
    assert.match(
      launched!.stderr(),
      /\n\S+\/broken\.yaml:\d+: invalid YAML: [^\n]* \(refused an invalid manifest; its object keeps its last good version\)\n/,
    );
    assert.match(launched!.stderr(), /\nApplied \d+ objects; errors \(above\): 1\n/);
  });

  test('a container without a command waits in CreateContainerError (UP_ERR_CONTAINER), the pod Pending with no restarts', async () => {
    assert.deepEqual(
      table.pods.find((p) => p.name === 'imageonly'),
      {
        namespace: NS,
        name: 'imageonly',
        ready: '0/1',
        status: 'CreateContainerError',
        restarts: 0,
        ip: table.pods.find((p) => p.name === 'imageonly')!.ip,
        node: table.pods.find((p) => p.name === 'imageonly')!.node,
      },
    );
    const message = (
      await kubectl(
        'get',
        'pod',
        '-n',
        NS,
        'imageonly',
        '-o',
        'jsonpath={.status.phase}: {.status.containerStatuses[0].state.waiting.message}',
      )
    ).stdout;
    assert.equal(
      message,
      "Pending: UP_ERR_CONTAINER: container app has no command: amesh up runs a container's command and args, not its image",
    );
  });

  test('a pod reaches a pod on the other node by its IP (bridge + host-local per node, routes between the nodes)', async () => {
    const [a, b] = echoPods();
    const r = await nodeIn(
      a!.name,
      `const s = require('net').connect(8080, '${b!.ip}', () => s.end('ping ${id}')); s.on('data', (d) => process.stdout.write(d));`,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `ping ${id}`);
  });

  test("a pod reaches a Service by its ClusterIP through kube-proxy's rules in its node's namespace, the endpoint on its own node and the one on the other; and the API server through default/kubernetes", async () => {
    const [a] = echoPods();
    // Ten connections in a row, each to a random endpoint: one path that did not answer would fail about half of them.
    const script = `let n = 0; const one = () => { const s = require('net').connect(80, '${ECHO_VIP}', () => s.end('svc ${id}')); let got = ''; s.setTimeout(3000, () => { console.log('timeout'); process.exit(1); }); s.on('data', (d) => (got += d)); s.on('end', () => { if (got !== 'svc ${id}') process.exit(1); if (++n < 10) one(); else console.log('ok'); }); s.on('error', (e) => { console.log(e.code); process.exit(1); }); }; one();`;
    const r = await nodeIn(a!.name, script);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.equal(r.stdout.trim(), 'ok');
    const api = await nodeIn(
      a!.name,
      "require('https').get({ host: '10.96.0.1', path: '/version', rejectUnauthorized: false }, (r) => console.log(r.statusCode)).on('error', (e) => console.log(e.code));",
    );
    assert.match(api.stdout, /^\d{3}$/m, api.stdout + api.stderr);
  });

  test('a LoadBalancer Service gets the first address of the pool and a node port, which the host reaches as it reaches a kind cluster through MetalLB', async () => {
    let address = '';
    await waitFor(
      'an ingress address',
      async () =>
        (address = (
          await kubectl('get', 'service', '-n', NS, 'echo-lb', '-o', 'jsonpath={.status.loadBalancer.ingress[0].ip}')
        ).stdout) !== '',
      10_000,
    );
    assert.equal(address, '10.240.0.128');
    assert.match(
      (await kubectl('get', 'service', '-n', NS, 'echo-lb')).stdout,
      /echo-lb\s+LoadBalancer\s+10\.96\.\d+\.\d+\s+10\.240\.0\.128\s+7070:3\d{4}\/TCP/,
      'kubectl shows the address under EXTERNAL-IP, and the node port it was given',
    );
    const nodePort = (await kubectl('get', 'service', '-n', NS, 'echo-lb', '-o', 'jsonpath={.spec.ports[0].nodePort}'))
      .stdout;
    const viaNodePort = await host.exec('node', [
      '-e',
      `const s = require('net').connect(${nodePort}, '10.240.0.3', () => s.end('np ${id}')); s.on('data', (d) => process.stdout.write(d)); s.setTimeout(3000, () => process.exit(1));`,
    ]);
    assert.equal(viaNodePort, `np ${id}`, "and node2's address reaches it at that node port");
    const reply = await host.exec('node', [
      '-e',
      `const s = require('net').connect(7070, '${address}', () => s.end('lb ${id}')); s.on('data', (d) => process.stdout.write(d)); s.setTimeout(3000, () => process.exit(1));`,
    ]);
    assert.equal(reply, `lb ${id}`);
  });

  test("amesh exec --node runs in the node namespace, which routes the other node's pod CIDR through it", async () => {
    const r = await amesh(host, 'exec', '--data-dir', dataDir, '--node', 'node1', '--', 'ip', 'route');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /10\.244\.1\.0\/24 via 10\.240\.0\.3 dev eth0/);
  });

  test('amesh logs shows what a container printed; a pod with two containers would need -c', async () => {
    const r = await amesh(host, 'logs', '--data-dir', dataDir, `${NS}/${echoPods()[0]!.name}`);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, 'listening\n');
    const missing = await amesh(host, 'logs', '--data-dir', dataDir, `${NS}/nope`);
    assert.notEqual(missing.status, 0);
    assert.match(missing.stderr, /UP_ERR_NOT_FOUND: pod demo\/nope/);
  });

  test('a pod added to the config dir is applied and run; an exec readiness probe keeps it unready until its command succeeds', async () => {
    const readyOf = async (): Promise<string> =>
      (
        await kubectl(
          'get',
          'pod',
          '-n',
          NS,
          'gated',
          '-o',
          'jsonpath={.status.phase}/{.status.conditions[?(@.type=="Ready")].status}',
        )
      ).stdout;
    await writeFile(
      path.join(dir, 'manifests', 'gated.yaml'),
      commandPod({
        name: 'gated',
        namespace: NS,
        container: {
          name: 'app',
          command: ['node', '-e', idle(marker)],
          readinessProbe: { exec: { command: ['test', '-f', readyFile] }, periodSeconds: 1 },
        },
      }),
    );
    await waitFor('gated running', async () => (await readyOf()) === 'Running/False', 30_000);
    await writeFile(readyFile, '');
    await waitFor('gated Ready', async () => (await readyOf()) === 'Running/True', 20_000);
  });

  test('a container that exits is restarted by restartPolicy Always, with its exit in lastState', async () => {
    const crashy = JSON.parse((await kubectl('get', 'pod', '-n', NS, 'crashy', '-o', 'json')).stdout) as {
      status: {
        phase: string;
        containerStatuses: {
          restartCount: number;
          lastState: { terminated?: { exitCode: number } };
          state: { running?: object };
        }[];
      };
    };
    const s = crashy.status.containerStatuses[0]!;
    assert.equal(crashy.status.phase, 'Running');
    assert.equal(s.restartCount, 1);
    assert.equal(s.lastState.terminated?.exitCode, 3);
    assert.ok(s.state.running);
    assert.equal((await amesh(host, 'logs', '--data-dir', dataDir, `${NS}/crashy`)).stdout, 'crashing\n');
    assert.match(
      launched!.stderr(),
      new RegExp(
        `\\n${NS}/crashy: container app failed: exit code 3 \\(.* logs --data-dir ${dataDir} ${NS}/crashy -c app\\)\\n`,
      ),
      'the crash reached the console',
    );
  });

  test("a deleted pod's processes are stopped, its IP released by CNI DEL and its network namespace removed", async () => {
    const pod = JSON.parse((await kubectl('get', 'pod', '-n', NS, 'crashy', '-o', 'json')).stdout) as {
      metadata: { uid: string };
      spec: { nodeName: string };
      status: { podIP: string };
    };
    const ipamFile = path.join(dataDir, 'nodes', pod.spec.nodeName, 'cni', 'ipam', 'amesh', pod.status.podIP);
    assert.ok(existsSync(ipamFile), 'host-local holds the IP');
    const r = await kubectl('delete', 'pod', '-n', NS, 'crashy');
    assert.equal(r.status, 0, r.stderr);
    const netns = `${cluster}-pod-${pod.metadata.uid}`;
    await waitFor(
      'the sandbox removed',
      async () => !(await runToExit('ip', ['netns', 'list'], 10_000)).stdout.includes(netns),
      20_000,
    );
    assert.equal(existsSync(ipamFile), false);
    assert.doesNotMatch((await runToExit('ps', ['-e', '-o', 'args='], 10_000)).stdout, /crashed'/);
  });

  test("kubectl get pods -A -o wide shows phase, Ready, IP and node from the data dir's kubeconfig", async () => {
    const r = await kubectl('get', 'pods', '-A', '-o', 'wide');
    assert.equal(r.status, 0, r.stderr);
    for (const p of echoPods())
      assert.match(
        r.stdout,
        new RegExp(`${NS} +${p.name} +1/1 +Running +0 +\\S+ +${p.ip.replace(/\./g, '\\.')} +${p.node}`),
      );
  });

  test('a second up beside the running one, of the same name or another, refuses before touching anything (UP_ERR_RUNNING), naming its data dir and pid', async () => {
    const second = path.join(dir, 'second');
    for (const name of [cluster, `s${id}`]) {
      const r = await amesh(
        host,
        'up',
        '--config-dir',
        path.join(dir, 'manifests'),
        '--data-dir',
        second,
        '--name',
        name,
      );
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /UP_ERR_RUNNING: a cluster is already running/);
      assert.ok(
        r.stderr.includes(`(pid ${String(launched!.up.pid)}, cluster ${cluster}) with --data-dir ${dataDir}`),
        r.stderr,
      );
      assert.equal(existsSync(second), false);
    }
    const bridge = await runToExit('ip', ['-n', host.name, 'link', 'show', `${cluster}-br`], 10_000);
    assert.equal(bridge.status, 0, 'the running cluster keeps its bridge');
  });

  test('Ctrl-C with its output piped to a reader that is gone (| tee, ended by the same Ctrl-C) still tears everything down: no namespace, link, route, iptables rule, ipset, process or data left', async () => {
    await assertTornDown(launched!, host, cluster, marker, before_, dataDir, { signal: 'SIGINT', closeOutput: true });
  });

  test("the logs outlive the cluster: up.log, and amesh logs shows a container's output", async () => {
    assert.match(readFileSync(path.join(dataDir, 'up.log'), 'utf8'), /refused an invalid manifest/);
    const r = await amesh(host, 'logs', '--data-dir', dataDir, `${NS}/${echoPods()[0]!.name}`);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, 'listening\n');
  });
});

describe('amesh down after a crashed amesh up', { skip }, () => {
  test("a second up refuses the leftovers (UP_ERR_LEFTOVERS); down kills the pods' processes and removes namespaces and links", async () => {
    const id = randomBytes(3).toString('hex');
    const cluster = `d${id}`;
    const marker = `amesh-down-test-${id}`;
    const host = await TestNetns.create();
    const dir = await mkdtemp(path.join(tmpdir(), 'amesh-down-'));
    try {
      const dataDir = path.join(dir, 'data');
      const manifests = path.join(dir, 'manifests');
      await mkdir(manifests);
      await writeFile(
        path.join(manifests, 'app.yaml'),
        namespaces(NS) +
          commandPod({
            name: 'solo',
            namespace: NS,
            container: { name: 'app', command: nodeEchoCommand(8080, marker) },
          }),
      );
      const clean = await hostState(host, cluster, marker);
      const { up, ready } = launchUp(host, [
        '--config-dir',
        manifests,
        '--data-dir',
        dataDir,
        '--name',
        cluster,
        '--nodes',
        '1',
        '--dataplane',
        'none',
      ]);
      try {
        await ready;
      } finally {
        if (up.exitCode === null) {
          up.kill('SIGKILL');
          await once(up, 'exit');
        }
      }
      const left = await hostState(host, cluster, marker);
      assert.match(left.netns, new RegExp(`${cluster}-node1`));
      assert.match(left.processes, new RegExp(marker), "the pod's process outlived the crash");

      const again = await amesh(host, 'up', '--config-dir', manifests, '--data-dir', dataDir, '--name', cluster);
      assert.notEqual(again.status, 0);
      assert.match(again.stderr, /UP_ERR_LEFTOVERS/);

      const down = await amesh(host, 'down', '--data-dir', dataDir);
      assert.equal(down.status, 0, down.stderr);
      assert.match(down.stderr, new RegExp(`Removed netns ${cluster}-node1`));
      assert.match(down.stderr, new RegExp(`Logs kept: ${dataDir}/up.log`));
      assert.deepEqual(await hostState(host, cluster, marker), clean);
      assert.deepEqual(readdirSync(dataDir).sort(), ['pods', 'up.log']);
    } finally {
      await host.remove();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('amesh up that cannot start', { skip }, () => {
  test('where its bridge name is taken: fails on File exists (UP_ERR_NETWORK) and leaves the link it did not make', async () => {
    const name = `b${randomBytes(3).toString('hex')}`;
    const host = await TestNetns.create();
    const dir = await mkdtemp(path.join(tmpdir(), 'amesh-taken-'));
    try {
      await host.exec('ip', ['link', 'add', `${name}-br`, 'type', 'bridge']);
      const dataDir = path.join(dir, 'data');
      const r = await amesh(host, 'up', '--data-dir', dataDir, '--name', name, '--nodes', '1', '--dataplane', 'none');
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /UP_ERR_NETWORK: ip link add \S+-br type bridge failed: .*File exists/);
      await host.exec('ip', ['link', 'show', `${name}-br`]);
      assert.deepEqual(readdirSync(dataDir), ['up.log']);
    } finally {
      await host.remove();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('without root: up, down and demo say they need root (UP_ERR_NOT_ROOT), not EACCES, and touch nothing', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'amesh-noroot-'));
    try {
      const dataDir = path.join(dir, '.amesh', 'up');
      const { cmd, args } = ameshCommand();
      for (const command of [['up'], ['down'], ['demo']]) {
        const r = await runToExit(
          'runuser',
          ['-u', 'nobody', '--', cmd, ...args, ...command, '--data-dir', dataDir],
          60_000,
        );
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, new RegExp(`^error: UP_ERR_NOT_ROOT: amesh ${command[0]!} needs root`), r.stderr);
      }
      assert.equal(existsSync(path.join(dir, '.amesh')), false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe(
  'amesh up --dataplane ambient: Istio installed as amesh install installs it, its daemons run by DaemonSets',
  { skip },
  () => {
    test("amesh install's objects run on the nodes: istiod's Deployment pod, istio-cni-node (host network) and ztunnel (in-pod mode) DaemonSet pods turn Ready; ztunnel reaches istiod by its Service with its projected token; a killed ztunnel or node agent is restarted by its kubelet with the restart counted; a pod gets its IP through bridge, host-local and the chained amesh-cni", async () => {
      const id = randomBytes(3).toString('hex');
      const host = await TestNetns.create();
      const dir = await mkdtemp(path.join(tmpdir(), 'amesh-up-zt-'));
      const dataDir = path.join(dir, 'data');
      let launched: LaunchedUp | undefined;
      const kubectl = (...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> =>
        runToExit(
          'nsenter',
          [`--net=${host.path}`, '--', 'kubectl', '--kubeconfig', path.join(dataDir, 'kubeconfig'), ...args],
          30_000,
        );
      const podState = async (name: string): Promise<string> =>
        (
          await kubectl(
            'get',
            'pod',
            '-n',
            'istio-system',
            name,
            '-o',
            'jsonpath={.status.podIP}/{.status.containerStatuses[0].restartCount}/{.status.containerStatuses[0].ready}',
          )
        ).stdout;
      try {
        const manifests = path.join(dir, 'manifests');
        await mkdir(manifests);
        await writeFile(path.join(manifests, 'ns.yaml'), namespaces(NS));
        launched = launchUp(host, [
          '--config-dir',
          manifests,
          '--data-dir',
          dataDir,
          '--name',
          `z${id}`,
          '--nodes',
          '1',
          '--dataplane',
          'ambient',
        ]);
        const table = await launched.ready;
        const system = table.pods.filter((p) => p.namespace === 'istio-system');
        assert.deepEqual(
          system.map((p) => [p.name.replace(/-[a-z0-9]{5}$/, '').replace(/-[a-z0-9]{6,10}$/, ''), p.ready, p.restarts]),
          [
            ['istio-cni-node', '1/1', 0],
            ['istiod', '1/1', 0],
            ['ztunnel', '1/1', 0],
          ],
        );
        const [agent, istiod, ztunnel] = system;
        assert.equal(agent?.ip, '10.240.0.2', "the node agent runs in the node's network, as the chart's hostNetwork");
        assert.match(istiod?.ip ?? '', /^10\.244\.0\.\d+$/);
        assert.match(
          ztunnel?.ip ?? '',
          /^10\.244\.0\.\d+$/,
          "ztunnel runs in a pod network of its own, as the chart's",
        );
        assert.deepEqual(
          table.pods
            .filter((p) => p.namespace === 'kube-system')
            .map((p) => [p.name.startsWith('coredns-') ? 'coredns' : p.name, p.status, p.node]),
          [
            ['coredns', 'Running', 'node1'],
            ['coredns', 'Running', 'node1'],
            ['kube-apiserver-node1', 'Running', 'node1'],
            ['kube-controller-manager-node1', 'Running', 'node1'],
            ['kube-scheduler-node1', 'Running', 'node1'],
          ],
          "the cluster's DNS and control plane run as kind's do",
        );
        await waitFor(
          "ztunnel's xDS stream to istiod's Service, authenticated by TokenReview",
          async () =>
            /xDS stream established.*address=https:\/\/istiod\.istio-system\.svc:15012/.test(
              (await amesh(host, 'logs', '--data-dir', dataDir, `istio-system/${ztunnel?.name ?? ''}`)).stdout,
            ),
          30_000,
        );
        const admin = await amesh(
          host,
          'exec',
          '--data-dir',
          dataDir,
          `istio-system/${ztunnel?.name ?? ''}`,
          '--',
          'curl',
          '-sS',
          'http://127.0.0.1:15000/config_dump',
        );
        assert.equal(admin.status, 0, admin.stderr);
        assert.match(admin.stdout, new RegExp(istiod?.name ?? 'istiod'), 'its workloads came from istiod');

        for (const pod of [ztunnel, agent]) {
          const name = pod?.name ?? '';
          const containerId = (
            await kubectl(
              'get',
              'pod',
              '-n',
              'istio-system',
              name,
              '-o',
              'jsonpath={.status.containerStatuses[0].containerID}',
            )
          ).stdout;
          assert.equal((await killContainer(host, dataDir, containerId)).status, 0);
          await waitFor(
            `${name} restarted and Ready again`,
            async () => (await podState(name)) === `${pod?.ip ?? ''}/1/true`,
            60_000,
          );
        }
        const listed = (await kubectl('get', 'pods', '-n', 'istio-system')).stdout;
        for (const pod of [ztunnel, agent])
          assert.match(listed, new RegExp(`^${pod?.name ?? ''}\\s+1/1\\s+Running\\s+1\\s`, 'm'), listed);

        // amesh-cni, last in the chain, reads the pod from the API with the agent's istio-cni-kubeconfig and passes
        // the bridge's result on; a failure there would leave the pod without a sandbox.
        await writeFile(
          path.join(manifests, 'plain.yaml'),
          commandPod({
            name: 'plain',
            namespace: NS,
            container: { name: 'app', command: nodeEchoCommand(8080, `plain-${id}`) },
          }),
        );
        await waitFor(
          'plain running',
          async () =>
            /^Running 10\.244\.0\.\d+$/.test(
              (await kubectl('get', 'pod', '-n', NS, 'plain', '-o', 'jsonpath={.status.phase} {.status.podIP}')).stdout,
            ),
          30_000,
        );
      } finally {
        if (launched?.up.exitCode === null) {
          launched.up.kill('SIGTERM');
          await once(launched.up, 'exit');
        }
        await host.remove();
        await rm(dir, { recursive: true, force: true });
      }
    });
  },
);
