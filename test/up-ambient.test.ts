/**
 * Traffic captured inside `amesh up --dataplane ambient`: two nodes, each with its node agent and ztunnel (in-pod
 * mode); a server in an enrolled namespace on node1 behind a Service, an unchanged client in another enrolled
 * namespace on node2, and an un-enrolled pod. Shows transparent capture across nodes by ClusterIP and by DNS name
 * (ztunnel's DNS proxy), the SPIFFE identities in the server ztunnel's metrics, Istio's rules in the enrolled pod,
 * un-enrolling and enrolling a running pod by label, the node agent and its plugin reaching the API as istio-cni
 * (not as up's admin), PeerAuthentication STRICT / AuthorizationPolicy DENY written into the config dir (a DENY
 * the API refuses included), L7 through a waypoint (an HTTPRoute, AuthorizationPolicy and RequestAuthentication), and
 * SIGTERM leaving nothing behind.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  amesh,
  assertTornDown,
  hostState,
  inPodNetns,
  killContainer,
  kubectlIn,
  launchUp,
  removeCluster,
  upSkip,
  type HostState,
  type LaunchedUp,
  type RunResult,
} from './helpers/amesh-up.js';
import { normalizeSave } from './helpers/iptables-save.js';
import { ambientNamespace, commandPod, deployment, namespaces, object } from './helpers/manifests.js';
import { waitFor } from './helpers/mesh-fixture.js';
import { TestNetns } from './helpers/netns.js';
import { runToExit } from './helpers/run-to-exit.js';
import { readGolden } from './helpers/pod-rules-cases.js';
import { runPython } from './helpers/python.js';
import { tlsSecret } from './helpers/tls-secret.js';
import { packageRoot } from '../src/lib/package-root.js';
import { parse, stringify } from 'yaml';

/** Long enough for a config change to reach the ztunnels, an agent to act on a label, or a restarted daemon to be back. */
const CHANGE_DEADLINE_MS = 30_000;
const CLIENT = 'cli/client';
const OUTSIDER = 'plain/outsider';
const SERVER_PORT = 8080;
const SERVICE_PORT = 80;
const CLIENT_ID = 'spiffe://cluster.local/ns/cli/sa/client';
const SERVER_ID = 'spiffe://cluster.local/ns/srv/sa/server';
const FQDN = 'server.srv.svc.cluster.local';

/** A pod's process that connects to argv[1]:argv[2] and prints what it read, or `ERR <code>` / `CLOSED` without data. */
const DIAL =
  "const [h, p] = process.argv.slice(1); const s = require('net').connect(Number(p), h); let d = ''; s.setTimeout(5000, () => { process.stdout.write('ERR TIMEOUT'); s.destroy(); }); s.on('data', (x) => (d += x)); s.on('end', () => process.stdout.write(d === '' ? 'CLOSED' : d)); s.on('error', (e) => process.stdout.write('ERR ' + e.code));";
/** An HTTPS GET of the API server's /version at argv[1]:443 that prints the status line's code (any answer is the API's). */
const HTTPS_STATUS =
  "require('https').get({ host: process.argv[1], port: 443, path: '/version', rejectUnauthorized: false, timeout: 5000 }, (r) => { process.stdout.write('HTTP ' + r.statusCode); r.resume(); }).on('error', (e) => process.stdout.write('ERR ' + e.code)).on('timeout', function () { process.stdout.write('ERR TIMEOUT'); this.destroy(); });";

/** Answers each connection on SERVER_PORT with the address it came from, then closes (a probe's reset is no crash). */
function peerAddressServer(marker: string): string[] {
  return [
    'node',
    '-e',
    `/* ${marker} */ require('net').createServer((s) => { s.on('error', () => undefined); s.end(s.remoteAddress + '\\n'); }).listen(${String(SERVER_PORT)}, '0.0.0.0', () => console.log('listening'))`,
  ];
}

function idle(marker: string): string[] {
  return ['node', '-e', `/* ${marker} */ setInterval(() => undefined, 1e6)`];
}

async function writeManifests(dir: string, marker: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const sa = (namespace: string, name: string): string =>
    object({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
  await writeFile(
    path.join(dir, 'app.yaml'),
    ambientNamespace('srv') +
      ambientNamespace('cli') +
      namespaces('plain', 'istio-system') +
      sa('srv', 'server') +
      sa('cli', 'client') +
      commandPod({
        name: 'server',
        namespace: 'srv',
        nodeName: 'node1',
        serviceAccountName: 'server',
        labels: { app: 'server' },
        container: {
          name: 'server',
          command: peerAddressServer(marker),
          ports: { tcp: SERVER_PORT },
          readinessProbe: { tcpSocket: { port: 'tcp' }, periodSeconds: 1 },
        },
      }) +
      object({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'server', namespace: 'srv' },
        spec: { selector: { app: 'server' }, ports: [{ name: 'tcp', port: SERVICE_PORT, targetPort: SERVER_PORT }] },
      }) +
      commandPod({
        name: 'client',
        namespace: 'cli',
        nodeName: 'node2',
        serviceAccountName: 'client',
        container: { name: 'client', command: peerAddressServer(marker), ports: { tcp: SERVER_PORT } },
      }) +
      commandPod({
        name: 'outsider',
        namespace: 'plain',
        nodeName: 'node2',
        container: { name: 'outsider', command: idle(marker) },
      }),
  );
}

describe(
  "amesh up --dataplane ambient: pods captured by the node agent, traffic through both nodes' ztunnels",
  { skip: upSkip },
  () => {
    const id = randomBytes(3).toString('hex');
    const marker = `amesh-up-ambient-${id}`;
    let host: TestNetns;
    let dir: string;
    let dataDir: string;
    let manifests: string;
    let launched: LaunchedUp | undefined;
    let serverIp = '';
    let clean: HostState;
    const cluster = `a${id}`;
    let clusterIp = '';
    const kubectl = (...args: string[]): Promise<RunResult> => kubectlIn(host, dataDir, ...args);
    const jsonpath = async (ns: string, kind: string, name: string, expr: string): Promise<string> =>
      (await kubectl('get', kind, '-n', ns, name, '-o', `jsonpath=${expr}`)).stdout;
    const dial = async (from: string, h: string, p: number): Promise<string> => {
      const r = await amesh(host, 'exec', '--data-dir', dataDir, from, '--', 'node', '-e', DIAL, h, String(p));
      assert.equal(r.status, 0, r.stderr);
      return r.stdout;
    };
    const podIp = (ns: string, name: string): Promise<string> => jsonpath(ns, 'pod', name, '{.status.podIP}');
    /** The name of the pod a DaemonSet of amesh install (`app=ztunnel`, `k8s-app=istio-cni-node`) runs on `node`. */
    const daemonPod = async (label: string, node: string): Promise<string> => {
      const r = await kubectl(
        'get',
        'pods',
        '-n',
        'istio-system',
        '-l',
        label,
        '--field-selector',
        `spec.nodeName=${node}`,
        '-o',
        'jsonpath={.items[*].metadata.name}',
      );
      assert.match(r.stdout, /^\S+$/, `one pod of ${label} on ${node}: ${r.stderr}`);
      return r.stdout;
    };
    const ztunnelOn = (node: string): Promise<string> => daemonPod('app=ztunnel', node);
    const agentOn = (node: string): Promise<string> => daemonPod('k8s-app=istio-cni-node', node);
    /** The pod's rules as the node sees them: a container without NET_ADMIN may not read them itself. */
    const iptablesSave = async (pod: string): Promise<string> => {
      const [ns, name] = pod.split('/') as [string, string];
      const r = await inPodNetns(cluster, await jsonpath(ns, 'pod', name, '{.metadata.uid}'), 'iptables-save');
      assert.equal(r.status, 0, r.stderr);
      return normalizeSave(r.stdout);
    };
    /** The sum of `node`'s ztunnel's `metric` over the series whose labels include every one of `labels`. */
    const metricSum = async (node: string, metric: string, labels: readonly string[]): Promise<number> => {
      const r = await amesh(
        host,
        'exec',
        '--data-dir',
        dataDir,
        `istio-system/${await ztunnelOn(node)}`,
        '--',
        'curl',
        '-sS',
        'http://127.0.0.1:15020/metrics',
      );
      assert.equal(r.status, 0, r.stderr);
      let total = 0;
      for (const line of r.stdout.split('\n')) {
        if (line.startsWith(`${metric}{`) && labels.every((l) => line.includes(l)))
          total += Number(line.split(' ').at(-1));
      }
      return total;
    };
    /** `node`'s ztunnel's istio_tcp_connections_opened_total for connections from identity `from` to identity `to`. */
    const opened = (node: string, from: string, to: string): Promise<number> =>
      metricSum(node, 'istio_tcp_connections_opened_total', [
        `source_principal="${from}"`,
        `destination_principal="${to}"`,
      ]);
    /** The server ztunnel's count of connections from the client's identity to the server's. */
    const openedFromClient = (): Promise<number> => opened('node1', CLIENT_ID, SERVER_ID);
    /** Both ztunnels' logs, for a failure's message. */
    const ztunnelLogs = async (): Promise<string> => {
      const out = await Promise.all(
        ['node1', 'node2'].map(
          async (n) =>
            `--- ztunnel on ${n}\n${(await amesh(host, 'logs', '--data-dir', dataDir, `istio-system/${await ztunnelOn(n)}`)).stdout}`,
        ),
      );
      const pods = (await kubectl('get', 'pods', '-A', '-o', 'wide')).stdout;
      const cond = await jsonpath('srv', 'pod', 'server', '{.status.conditions}');
      return [...out, pods, cond, launched?.stderr().slice(-3000) ?? ''].join('\n');
    };

    /** Waits until connections from `from` to `h`:`p` are refused (reset, or closed without data). */
    const untilRefused = async (what: string, from: string, h: string, p: number): Promise<void> => {
      let got = '';
      await waitFor(what, async () => /^(ERR|CLOSED)/.test((got = await dial(from, h, p))), CHANGE_DEADLINE_MS).catch(
        async () => assert.fail(`${got}\n${await ztunnelLogs()}`),
      );
    };
    const untilClientAllowed = async (clientIp: string): Promise<void> => {
      await waitFor(
        'the client allowed again',
        async () => (await dial(CLIENT, clusterIp, SERVICE_PORT)) === `${clientIp}\n`,
        CHANGE_DEADLINE_MS,
      );
    };
    /** A DENY AuthorizationPolicy in srv for the client's identity. */
    const denyClient = (metadata: Record<string, unknown>): string =>
      object({
        apiVersion: 'security.istio.io/v1',
        kind: 'AuthorizationPolicy',
        metadata: { namespace: 'srv', ...metadata },
        spec: { action: 'DENY', rules: [{ from: [{ source: { principals: ['cluster.local/ns/cli/sa/client'] } }] }] },
      });

    before(async () => {
      host = await TestNetns.create();
      dir = await mkdtemp(path.join(tmpdir(), 'amesh-up-ambient-'));
      dataDir = path.join(dir, 'data');
      manifests = path.join(dir, 'manifests');
      await writeManifests(manifests, marker);
      clean = await hostState(host, cluster, marker);
      launched = launchUp(host, [
        '--config-dir',
        manifests,
        '--data-dir',
        dataDir,
        '--name',
        cluster,
        '--nodes',
        '2',
        '--dataplane',
        'ambient',
      ]);
      await launched.ready;
      await waitFor(
        'client and server enrolled',
        async () =>
          (await jsonpath('cli', 'pod', 'client', '{.metadata.annotations.ambient\\.istio\\.io/redirection}')) ===
            'enabled' &&
          (await jsonpath('srv', 'pod', 'server', '{.metadata.annotations.ambient\\.istio\\.io/redirection}')) ===
            'enabled',
        CHANGE_DEADLINE_MS,
      );
      serverIp = await podIp('srv', 'server');
      clusterIp = await jsonpath('srv', 'service', 'server', '{.spec.clusterIP}');
    });

    after(async () => {
      await removeCluster(launched, host, dataDir);
      await host.remove();
      await rm(dir, { recursive: true, force: true });
    });

    test("an unchanged client on node2 reaches the Service on node1 by ClusterIP and by DNS names (answered by node2's ztunnel DNS proxy); the server ztunnel counts the connections with both SPIFFE identities", async () => {
      const clientIp = await podIp('cli', 'client');
      const before_ = await openedFromClient();
      const dnsBefore = await metricSum('node2', 'istio_dns_requests_total', []);
      for (const target of [clusterIp, FQDN, 'server.srv', 'server.srv.svc']) {
        let got = '';
        await waitFor(
          `client reaches ${target}`,
          async () => (got = await dial(CLIENT, target, SERVICE_PORT)) === `${clientIp}\n`,
          CHANGE_DEADLINE_MS,
        ).catch(async () => assert.fail(`${target}: ${got}\n${await ztunnelLogs()}`));
      }
      await waitFor(
        'four connections client -> server counted',
        async () => (await openedFromClient()) >= before_ + 4,
        CHANGE_DEADLINE_MS,
      );
      assert.ok(
        (await metricSum('node2', 'istio_dns_requests_total', [])) >= dnsBefore + 3,
        "the names were answered by node2's ztunnel DNS proxy",
      );
    });

    test("the captured client reaches the API server through the kubernetes Service's ClusterIP, whose only endpoint is in its EndpointSlice", async () => {
      const vip = (await kubectl('get', 'service', '-n', 'default', 'kubernetes', '-o', 'jsonpath={.spec.clusterIP}'))
        .stdout;
      let got = '';
      await waitFor(
        'client reaches the API server',
        async () => {
          const r = await amesh(host, 'exec', '--data-dir', dataDir, CLIENT, '--', 'node', '-e', HTTPS_STATUS, vip);
          got = r.stdout + r.stderr;
          return /^HTTP \d{3}$/.test(r.stdout);
        },
        CHANGE_DEADLINE_MS,
      ).catch(async () => assert.fail(`https://${vip}/version: ${got}\n${await ztunnelLogs()}`));
    });

    test("the other way: the server on node1 reaches the client pod on node2 by its IP, counted by node2's ztunnel with both identities", async () => {
      const before_ = await opened('node2', SERVER_ID, CLIENT_ID);
      let got = '';
      await waitFor(
        'server reaches client',
        async () => (got = await dial('srv/server', await podIp('cli', 'client'), SERVER_PORT)) === `${serverIp}\n`,
        CHANGE_DEADLINE_MS,
      ).catch(async () => assert.fail(`${got}\n${await ztunnelLogs()}`));
      await waitFor(
        'the connection server -> client counted',
        async () => (await opened('node2', SERVER_ID, CLIENT_ID)) > before_,
        CHANGE_DEADLINE_MS,
      );
    });

    test("the enrolled client pod carries ambient.istio.io/redirection: enabled and its iptables-save is Istio's default in-pod rules", async () => {
      assert.equal(
        await jsonpath('cli', 'pod', 'client', '{.metadata.annotations.ambient\\.istio\\.io/redirection}'),
        'enabled',
      );
      assert.equal(await iptablesSave(CLIENT), readGolden('pod-rules/default.iptables-save'));
    });

    test('labelling a running pod istio.io/dataplane-mode=none removes its rules and it reaches the server in plaintext; labelling it back enrolls it', async () => {
      const uid = await jsonpath('cli', 'pod', 'client', '{.metadata.uid}');
      let r = await kubectl('label', 'pod', '-n', 'cli', 'client', 'istio.io/dataplane-mode=none', '--overwrite');
      assert.equal(r.status, 0, r.stderr);
      await waitFor(
        'client un-enrolled',
        async () =>
          !(await jsonpath('cli', 'pod', 'client', '{.metadata.annotations}')).includes('redirection') &&
          (await iptablesSave(CLIENT)) === '',
        CHANGE_DEADLINE_MS,
      );
      const counted = await openedFromClient();
      assert.equal(await dial(CLIENT, serverIp, SERVER_PORT), `${await podIp('cli', 'client')}\n`);
      assert.equal(await openedFromClient(), counted, 'no mTLS connection from the client identity');

      r = await kubectl('label', 'pod', '-n', 'cli', 'client', 'istio.io/dataplane-mode=ambient', '--overwrite');
      assert.equal(r.status, 0, r.stderr);
      await waitFor(
        'client enrolled again',
        async () =>
          (await jsonpath('cli', 'pod', 'client', '{.metadata.annotations.ambient\\.istio\\.io/redirection}')) ===
            'enabled' && (await iptablesSave(CLIENT)) === readGolden('pod-rules/default.iptables-save'),
        CHANGE_DEADLINE_MS,
      ).catch(async (e: unknown) => {
        const agent = await amesh(host, 'logs', '--data-dir', dataDir, `istio-system/${await agentOn('node2')}`);
        assert.fail(`${String(e)}\n${agent.stdout.split('\n').slice(-30).join('\n')}\n${await ztunnelLogs()}`);
      });
      await waitFor(
        'client reaches the server through ztunnel',
        async () =>
          (await dial(CLIENT, clusterIp, SERVICE_PORT)).endsWith('\n') && (await openedFromClient()) > counted,
        CHANGE_DEADLINE_MS,
      );
      assert.equal(await jsonpath('cli', 'pod', 'client', '{.metadata.uid}'), uid, 'the pod was not recreated');
    });

    test("the node agent runs as istio-cni with its pod's in-cluster token, not up's admin kubeconfig; the plugin's kubeconfig it writes into the node is bound to its pod, may read pods and is refused (403) creating a pod or reading secrets", async () => {
      const agent = await agentOn('node1');
      assert.equal(await jsonpath('istio-system', 'pod', agent, '{.spec.serviceAccountName}'), 'istio-cni');
      assert.doesNotMatch(
        await jsonpath('istio-system', 'pod', agent, '{.spec.containers[0].args}'),
        /kubeconfig/,
        'the API reached in-cluster, as the chart runs it',
      );
      // Where the node's /var/run/istio-cni is (each node of up has its own); kubectl runs in the node's network,
      // as the plugin does, where the kubernetes Service's address is routed.
      const kubeconfig = path.join(dataDir, 'nodes', 'node1', 'root', 'run', 'istio-cni', 'istio-cni-kubeconfig');
      const as = (...args: string[]): Promise<RunResult> =>
        runToExit('ip', ['netns', 'exec', `${cluster}-node1`, 'kubectl', '--kubeconfig', kubeconfig, ...args], 30_000);
      const whoami = await as(
        'auth',
        'whoami',
        '-o',
        'jsonpath={.status.userInfo.username} {.status.userInfo.extra.authentication\\.kubernetes\\.io/pod-name[0]}',
      );
      assert.equal(whoami.stdout, `system:serviceaccount:istio-system:istio-cni ${agent}`, whoami.stderr);
      const pods = await as('get', 'pods', '-n', 'cli', 'client', '-o', 'name');
      assert.equal(pods.stdout.trim(), 'pod/client', pods.stderr);
      for (const refused of [
        ['run', 'intruder', '-n', 'cli', '--image', 'amesh', '--restart', 'Never'],
        ['get', 'secrets', '-n', 'istio-system'],
      ]) {
        const r = await as(...refused);
        assert.notEqual(r.status, 0, refused.join(' '));
        assert.match(
          r.stderr,
          /\(Forbidden\).*User "system:serviceaccount:istio-system:istio-cni" cannot (create|list) resource "(pods|secrets)"/,
          refused.join(' '),
        );
      }
    });

    test("killing a node's ztunnel or node agent: its kubelet restarts it (DaemonSet pods), the client pod is not recreated and its traffic is back", async () => {
      const clientIp = await podIp('cli', 'client');
      const uid = await jsonpath('cli', 'pod', 'client', '{.metadata.uid}');
      for (const daemon of [await ztunnelOn('node2'), await agentOn('node2'), await ztunnelOn('node1')]) {
        const state = (): Promise<string> =>
          jsonpath(
            'istio-system',
            'pod',
            daemon,
            '{.status.containerStatuses[0].restartCount}/{.status.containerStatuses[0].ready}',
          );
        const restarts = Number((await state()).split('/')[0]);
        const id = await jsonpath('istio-system', 'pod', daemon, '{.status.containerStatuses[0].containerID}');
        assert.equal((await killContainer(host, dataDir, id)).status, 0);
        await waitFor(
          `${daemon} restarted and Ready`,
          async () => (await state()) === `${String(restarts + 1)}/true`,
          CHANGE_DEADLINE_MS,
        );
        assert.match(
          launched!.stderr(),
          new RegExp(`\\nistio-system/${daemon}: container \\S+ failed: killed by SIGKILL \\(`),
          'the crash reached the console',
        );
        let got = '';
        await waitFor(
          `client traffic back after ${daemon} restarted`,
          async () => (got = await dial(CLIENT, clusterIp, SERVICE_PORT)) === `${clientIp}\n`,
          CHANGE_DEADLINE_MS,
        ).catch(async () => assert.fail(`${got}\n${await ztunnelLogs()}`));
      }
      assert.equal(
        await jsonpath(
          'cli',
          'pod',
          'client',
          '{.metadata.uid}/{.status.containerStatuses[0].restartCount}/{.metadata.annotations.ambient\\.istio\\.io/redirection}',
        ),
        `${uid}/0/enabled`,
      );
      assert.equal(await iptablesSave(CLIENT), readGolden('pod-rules/default.iptables-save'));
    });

    test('PeerAuthentication STRICT written into the config dir refuses plaintext from an un-enrolled pod; an AuthorizationPolicy DENY refuses the captured client until it is removed', async () => {
      const clientIp = await podIp('cli', 'client');
      const outsiderIp = await podIp('plain', 'outsider');
      assert.equal(
        await dial(OUTSIDER, serverIp, SERVER_PORT),
        `${outsiderIp}\n`,
        'PERMISSIVE: plaintext from outside the mesh is let in',
      );
      await writeFile(
        path.join(manifests, 'strict.yaml'),
        object({
          apiVersion: 'security.istio.io/v1',
          kind: 'PeerAuthentication',
          metadata: { name: 'strict', namespace: 'srv' },
          spec: { mtls: { mode: 'STRICT' } },
        }),
      );
      await untilRefused('plaintext refused', OUTSIDER, serverIp, SERVER_PORT);
      assert.equal(
        await dial(CLIENT, clusterIp, SERVICE_PORT),
        `${clientIp}\n`,
        'mTLS from the captured client still passes',
      );

      const deny = path.join(manifests, 'deny.yaml');
      await writeFile(deny, denyClient({ name: 'deny-client' }));
      await untilRefused('the client denied', CLIENT, clusterIp, SERVICE_PORT);
      await unlink(deny);
      await untilClientAllowed(clientIp);
    });

    test("a DENY AuthorizationPolicy the config dir cannot honour is named on the console with istiod's reason and stands in as deny-all for its namespace until it leaves the dir", async () => {
      const clientIp = await podIp('cli', 'client');
      assert.equal(await dial(CLIENT, clusterIp, SERVICE_PORT), `${clientIp}\n`, 'allowed before');
      const refused = path.join(manifests, 'refused.yaml');
      // Istio's CRD types ports as strings; a port that is not a number leaves the DENY rule nothing to match.
      await writeFile(
        refused,
        object({
          apiVersion: 'security.istio.io/v1',
          kind: 'AuthorizationPolicy',
          metadata: { name: 'deny-bad-port', namespace: 'srv' },
          spec: { action: 'DENY', rules: [{ to: [{ operation: { ports: ['abc'] } }] }] },
        }),
      );
      await waitFor(
        "the refusal on up's console",
        () =>
          Promise.resolve(
            /refused\.yaml:\d+: AuthorizationPolicy srv\/deny-bad-port: spec\.rules\[0\]\.to\[0\]\.operation\.ports: no valid value left/.test(
              launched!.stderr(),
            ),
          ),
        CHANGE_DEADLINE_MS,
      );
      await untilRefused('the client denied by the stand-in', CLIENT, clusterIp, SERVICE_PORT);
      await unlink(refused);
      await untilClientAllowed(clientIp);
    });

    test("a pod's volumes as kubelet sets them up: configMap, secret, downwardAPI, emptyDir shared by two containers, hostPath, a projected istio-ca token, and the default token kubectl uses in-cluster", async () => {
      const hostDir = path.join(dir, 'host-path');
      const volumes = [
        { name: 'config', configMap: { name: 'app', items: [{ key: 'level', path: 'conf/level' }] } },
        { name: 'creds', secret: { secretName: 'db' } },
        {
          name: 'info',
          downwardAPI: {
            items: [
              { path: 'app', fieldRef: { fieldPath: "metadata.labels['app']" } },
              { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
            ],
          },
        },
        { name: 'scratch', emptyDir: {} },
        { name: 'host', hostPath: { path: hostDir, type: 'DirectoryOrCreate' } },
        {
          name: 'istio-token',
          projected: {
            sources: [{ serviceAccountToken: { audience: 'istio-ca', expirationSeconds: 43200, path: 'istio-token' } }],
          },
        },
      ];
      const mounts = [
        { name: 'config', mountPath: '/etc/app' },
        { name: 'creds', mountPath: '/var/run/secrets/db', readOnly: true },
        { name: 'info', mountPath: '/etc/podinfo' },
        { name: 'scratch', mountPath: '/scratch' },
        { name: 'host', mountPath: '/host-data' },
        { name: 'istio-token', mountPath: '/var/run/secrets/tokens' },
      ];
      const manifest = (level: string): string =>
        object({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'app', namespace: 'plain' },
          data: { level },
        }) +
        object({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'db', namespace: 'plain' },
          data: { password: Buffer.from('s3cr3t').toString('base64') },
        }) +
        object({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'files', namespace: 'plain', labels: { app: 'files' } },
          spec: {
            nodeName: 'node2',
            terminationGracePeriodSeconds: 1,
            volumes,
            containers: [
              {
                name: 'writer',
                image: 'amesh',
                command: [
                  'sh',
                  '-c',
                  `echo "$LEVEL" > /scratch/from-writer; echo host > /host-data/from-pod; exec ${idle(marker)
                    .map((a) => `'${a}'`)
                    .join(' ')}`,
                ],
                env: [{ name: 'LEVEL', valueFrom: { configMapKeyRef: { name: 'app', key: 'level' } } }],
                volumeMounts: mounts,
              },
              {
                name: 'reader',
                image: 'amesh',
                command: idle(marker),
                volumeMounts: [{ name: 'scratch', mountPath: '/shared' }],
              },
            ],
          },
        });
      await writeFile(path.join(manifests, 'runtime.yaml'), manifest('debug'));
      await waitFor(
        'files running',
        async () => (await jsonpath('plain', 'pod', 'files', '{.status.phase}')) === 'Running',
        CHANGE_DEADLINE_MS,
      );
      const inPod = async (container: string, script: string): Promise<string> => {
        const r = await amesh(
          host,
          'exec',
          '--data-dir',
          dataDir,
          '-c',
          container,
          'plain/files',
          '--',
          'sh',
          '-c',
          script,
        );
        assert.equal(r.status, 0, r.stderr);
        return r.stdout;
      };
      await waitFor(
        'the writer wrote',
        async () => (await inPod('reader', 'cat /shared/from-writer 2>/dev/null')) === 'debug\n',
        CHANGE_DEADLINE_MS,
      );
      assert.equal(
        await inPod('writer', 'cat /etc/app/conf/level /var/run/secrets/db/password /etc/podinfo/app'),
        'debugs3cr3tfiles',
      );
      assert.match(await inPod('writer', 'cat /etc/podinfo/labels'), /^app="files"$/m);
      assert.equal(await readFile(path.join(hostDir, 'from-pod'), 'utf8'), 'host\n', 'hostPath writes reach the host');
      assert.equal(await inPod('writer', 'hostname; ls /host-data'), 'files\nfrom-pod\n');

      const uid = await jsonpath('plain', 'pod', 'files', '{.metadata.uid}');
      const claims = (jwt: string): { aud: string[]; 'kubernetes.io': { pod: { name: string; uid: string } } } =>
        JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as never;
      const istioToken = claims(await inPod('writer', 'cat /var/run/secrets/tokens/istio-token'));
      assert.deepEqual(istioToken.aud, ['istio-ca']);
      assert.deepEqual(istioToken['kubernetes.io'].pod, { name: 'files', uid });
      assert.equal(await inPod('writer', 'cat /var/run/secrets/kubernetes.io/serviceaccount/namespace'), 'plain');
      // kubectl, an independent client, in the pod with no kubeconfig: the in-cluster config (KUBERNETES_SERVICE_HOST
      // and the mounted token and ca.crt) reaches the API by its ClusterIP through kube-proxy's rules.
      assert.equal(
        await inPod('writer', 'HOME=/nonexistent kubectl auth whoami -o jsonpath={.status.userInfo.username}'),
        'system:serviceaccount:plain:default',
      );

      await writeFile(path.join(manifests, 'runtime.yaml'), manifest('trace'));
      await waitFor(
        'the ConfigMap change reaches the volume',
        async () => (await inPod('writer', 'cat /etc/app/conf/level')) === 'trace',
        CHANGE_DEADLINE_MS,
      );
    });

    test("an enrolled pod's DNS: ztunnel answers the mesh's names and forwards the rest to kube-dns (a pod's dashed-IP name)", async () => {
      const serverIp = await podIp('srv', 'server');
      const podName = `${serverIp.replaceAll('.', '-')}.srv.pod.cluster.local`;
      const r = await amesh(host, 'exec', '--data-dir', dataDir, CLIENT, '--', 'getent', 'hosts', podName);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout.split(/\s+/)[0], serverIp);
      const svc = await amesh(host, 'exec', '--data-dir', dataDir, CLIENT, '--', 'getent', 'hosts', FQDN);
      assert.equal(svc.stdout.split(/\s+/)[0], clusterIp);
    });

    test('a rollout restart under 20 requests/s through ztunnel loses no request: a terminating pod gets no new connection and finishes what it has (its preStop sleep, as apps have)', async () => {
      await writeFile(
        path.join(manifests, 'rollout.yaml'),
        object({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'web', namespace: 'srv' },
          spec: {
            replicas: 2,
            selector: { matchLabels: { app: 'web' } },
            template: {
              metadata: { labels: { app: 'web' } },
              spec: {
                terminationGracePeriodSeconds: 15,
                containers: [
                  {
                    name: 'web',
                    image: 'amesh',
                    command: ['amesh', 'echo', 'server', '--address', '0.0.0.0:8080'],
                    ports: [{ name: 'http', containerPort: 8080 }],
                    readinessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 1 },
                    lifecycle: { preStop: { exec: { command: ['sleep', '5'] } } },
                  },
                ],
              },
            },
          },
        }) +
          object({
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name: 'web', namespace: 'srv' },
            spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
          }),
      );
      const rolledOut = (): Promise<RunResult> =>
        kubectl('rollout', 'status', '-n', 'srv', 'deployment/web', '--timeout=120s');
      // The manifest watcher applies the file once it sees it.
      await waitFor(
        'the Deployment applied',
        async () => (await kubectl('get', 'deployment', '-n', 'srv', 'web', '-o', 'name')).status === 0,
        CHANGE_DEADLINE_MS,
      );
      const first = await rolledOut();
      assert.equal(first.status, 0, first.stderr);
      const vip = await jsonpath('srv', 'service', 'web', '{.spec.clusterIP}');
      // 20 requests a second, each on its own connection (so each is balanced anew), for `seconds`; then the counts.
      const load =
        "const [h, p, secs] = process.argv.slice(1); const http = require('http'); let ok = 0, failed = 0; const errs = {}; const end = Date.now() + Number(secs) * 1000; const t = setInterval(() => { if (Date.now() > end) { clearInterval(t); setTimeout(() => console.log(JSON.stringify({ ok, failed, errs })), 4000); return; } const req = http.get({ host: h, port: Number(p), path: '/', agent: false, timeout: 3000 }, (r) => { r.resume(); r.on('end', () => { if (r.statusCode === 200) ok++; else { failed++; errs['HTTP ' + r.statusCode] = (errs['HTTP ' + r.statusCode] || 0) + 1; } }); }); req.on('timeout', () => req.destroy(new Error('timeout'))); req.on('error', (e) => { failed++; errs[e.code || e.message] = (errs[e.code || e.message] || 0) + 1; }); }, 50);";
      const seconds = 30;
      const traffic = amesh(
        host,
        'exec',
        '--data-dir',
        dataDir,
        CLIENT,
        '--',
        'node',
        '-e',
        load,
        vip,
        '80',
        String(seconds),
      );
      const started = Date.now();
      const restart = await kubectl('rollout', 'restart', '-n', 'srv', 'deployment/web');
      assert.equal(restart.status, 0, restart.stderr);
      assert.equal((await rolledOut()).status, 0);
      await waitFor(
        'the old pods gone',
        async () =>
          (await kubectl('get', 'pods', '-n', 'srv', '-l', 'app=web', '-o', 'name')).stdout.trim().split('\n')
            .length === 2,
        CHANGE_DEADLINE_MS,
      );
      assert.ok(Date.now() - started < seconds * 1000, 'the rollout ended while the traffic ran');
      const r = await traffic;
      assert.equal(r.status, 0, r.stderr);
      const counts = JSON.parse(r.stdout) as { ok: number; failed: number; errs: Record<string, number> };
      assert.deepEqual(
        { failed: counts.failed, errs: counts.errs },
        { failed: 0, errs: {} },
        `ok ${String(counts.ok)}`,
      );
      // The point is that none is lost; a client on a loaded machine may fall somewhat behind its pace.
      assert.ok(counts.ok >= seconds * 20 * 0.75, `about 20 a second were answered: ${String(counts.ok)}`);
      await unlink(path.join(manifests, 'rollout.yaml'));
    });

    test("securityContext: a non-root container cannot take over ztunnel's in-pod ports; runAsNonRoot as root and an unsupported volume get kubelet's answers", async () => {
      // Binds 15008 with SO_REUSEPORT beside ztunnel's listener in the pod's namespace, as the takeover trial did.
      const bind =
        "import socket,errno\ns=socket.socket(socket.AF_INET6)\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEPORT,1)\ntry:\n  s.bind(('::',15008)); s.listen(); print('BOUND')\nexcept OSError as e: print(errno.errorcode[e.errno])";
      const taker = (name: string, securityContext: object): object => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: 'cli' },
        spec: {
          nodeName: 'node2',
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'app', image: 'amesh', command: idle(marker), securityContext }],
        },
      });
      await writeFile(
        path.join(manifests, 'security.yaml'),
        object(taker('as-user', { runAsUser: 1000, runAsGroup: 1000 })) +
          object(taker('as-root', {})) +
          object(taker('root-no-caps', { runAsUser: 0, capabilities: { drop: ['ALL'] } })) +
          object(taker('non-root-policy', { runAsNonRoot: true })) +
          object({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'claims', namespace: 'plain' },
            spec: {
              nodeName: 'node1',
              volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
              containers: [
                {
                  name: 'app',
                  image: 'amesh',
                  command: idle(marker),
                  volumeMounts: [{ name: 'data', mountPath: '/data' }],
                },
              ],
            },
          }),
      );
      const redirected = (name: string): Promise<string> =>
        jsonpath('cli', 'pod', name, '{.metadata.annotations.ambient\\.istio\\.io/redirection}/{.status.phase}');
      for (const name of ['as-user', 'as-root', 'root-no-caps'])
        await waitFor(
          `${name} captured and running`,
          async () => (await redirected(name)) === 'enabled/Running',
          CHANGE_DEADLINE_MS,
        );
      const tryBind = async (name: string): Promise<string> => {
        const r = await amesh(host, 'exec', '--data-dir', dataDir, `cli/${name}`, '--', 'python3', '-c', bind);
        assert.equal(r.status, 0, r.stderr);
        return r.stdout.trim();
      };
      assert.equal(await tryBind('as-user'), 'EADDRINUSE', 'SO_REUSEPORT joins only sockets of the same user');
      // The exposure Istio documents: a root process shares ztunnel's user, and no capability is needed above 1024.
      assert.equal(await tryBind('as-root'), 'BOUND');
      assert.equal(await tryBind('root-no-caps'), 'BOUND');

      await waitFor(
        'runAsNonRoot refused',
        async () =>
          (await jsonpath(
            'cli',
            'pod',
            'non-root-policy',
            '{.status.containerStatuses[0].state.waiting.reason}: {.status.containerStatuses[0].state.waiting.message}',
          )) === 'CreateContainerConfigError: UP_ERR_CONTAINER: container has runAsNonRoot and image will run as root',
        CHANGE_DEADLINE_MS,
      );
      await waitFor(
        'a FailedMount Event names the volume type',
        async () =>
          /MountVolume\.SetUp failed for volume "data" : amesh up has no volume plugin for persistentVolumeClaim volume/.test(
            (
              await kubectl(
                'get',
                'events',
                '-n',
                'plain',
                '--field-selector',
                'reason=FailedMount',
                '-o',
                'jsonpath={.items[*].message}',
              )
            ).stdout,
          ),
        CHANGE_DEADLINE_MS,
      );
      assert.equal(
        await jsonpath('plain', 'pod', 'claims', '{.status.containerStatuses[0].state.waiting.reason}'),
        'ContainerCreating',
      );
      await unlink(path.join(manifests, 'security.yaml'));
    });

    test("a waypoint: istiod deploys the Gateway's Deployment, the Service bound to it is reached through it (the server sees the waypoint), and with the waypoint scaled to zero its traffic fails instead of going around it", async () => {
      const gw = path.join(dir, 'waypoint.yaml');
      await writeFile(
        gw,
        object({
          apiVersion: 'gateway.networking.k8s.io/v1',
          kind: 'Gateway',
          metadata: { name: 'waypoint', namespace: 'srv' },
          spec: { gatewayClassName: 'istio-waypoint', listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }] },
        }),
      );
      const ok = async (...args: string[]): Promise<void> => {
        const r = await kubectl(...args);
        assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
      };
      await ok('apply', '-f', gw);
      await ok(
        'wait',
        '--for=condition=Programmed',
        '-n',
        'srv',
        'gateways.gateway.networking.k8s.io/waypoint',
        '--timeout=60s',
      );
      await ok('rollout', 'status', '-n', 'srv', 'deployment/waypoint', '--timeout=120s');
      const waypointIp = (
        await kubectl(
          'get',
          'pods',
          '-n',
          'srv',
          '-l',
          'gateway.networking.k8s.io/gateway-name=waypoint',
          '-o',
          'jsonpath={.items[0].status.podIP}',
        )
      ).stdout;
      await ok('label', 'service', '-n', 'srv', 'server', 'istio.io/use-waypoint=waypoint');
      let got = '';
      await waitFor(
        'the client reaches the server through the waypoint',
        async () => (got = await dial(CLIENT, clusterIp, SERVICE_PORT)) === `${waypointIp}\n`,
        CHANGE_DEADLINE_MS,
      ).catch(async () => assert.fail(`${got}\n${await ztunnelLogs()}`));
      await ok('scale', 'deployment', '-n', 'srv', 'waypoint', '--replicas=0');
      await untilRefused('the waypoint gone, its traffic refused', CLIENT, clusterIp, SERVICE_PORT);
      await ok('label', 'service', '-n', 'srv', 'server', 'istio.io/use-waypoint-');
      await untilClientAllowed(await podIp('cli', 'client'));
      await ok('delete', '-f', gw);
    });

    test("L7 through a waypoint: an HTTPRoute header match reaches v2, a VirtualService reaches a DestinationRule subset, DELETE /admin is refused 403 while GET passes, a path needs a valid JWT from an independent issuer, Istio's sample ext_authz decides by header over HTTP and gRPC, h2c and gRPC pass through with their trailers, and the waypoint counts each in istio_requests_total", async () => {
      const minted = await runPython('mint_jwt.py', ['testing@secure.istio.io', 'alice']);
      assert.equal(minted.status, 0, minted.stderr);
      const jwt = JSON.parse(minted.stdout) as { jwks: object; valid: string; expired: string; other_key: string };
      const echo = (version: string): string =>
        object({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: `echo-${version}`, namespace: 'l7' },
          spec: {
            selector: { matchLabels: { app: 'echo', version } },
            template: {
              metadata: { labels: { app: 'echo', version } },
              spec: {
                containers: [
                  {
                    name: 'echo',
                    image: 'amesh',
                    command: ['amesh', 'echo', 'server', '--address', `0.0.0.0:${SERVER_PORT}`, '--name', version],
                    ports: [{ containerPort: SERVER_PORT }],
                  },
                ],
              },
            },
          },
        }) +
        object({
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: version === 'v1' ? 'echo' : `echo-${version}`, namespace: 'l7' },
          spec: {
            selector: { app: 'echo', version },
            ports: [{ name: 'http', port: SERVICE_PORT, targetPort: SERVER_PORT }],
          },
        });
      const echoRef = { group: '', kind: 'Service', name: 'echo' };
      const l7 = path.join(dir, 'l7.yaml');
      await writeFile(
        l7,
        ambientNamespace('l7') +
          echo('v1') +
          echo('v2') +
          object({
            apiVersion: 'gateway.networking.k8s.io/v1',
            kind: 'HTTPRoute',
            metadata: { name: 'echo', namespace: 'l7' },
            spec: {
              parentRefs: [echoRef],
              rules: [
                {
                  matches: [{ headers: [{ name: 'x-version', value: 'v2' }] }],
                  backendRefs: [{ name: 'echo-v2', port: SERVICE_PORT }],
                },
                { backendRefs: [{ name: 'echo', port: SERVICE_PORT }] },
              ],
            },
          }) +
          // Both versions behind one Service, told apart by Istio's DestinationRule subsets.
          object({
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name: 'echo-all', namespace: 'l7' },
            spec: { selector: { app: 'echo' }, ports: [{ name: 'http', port: SERVICE_PORT, targetPort: SERVER_PORT }] },
          }) +
          object({
            apiVersion: 'networking.istio.io/v1',
            kind: 'DestinationRule',
            metadata: { name: 'echo-all', namespace: 'l7' },
            spec: {
              host: 'echo-all',
              subsets: ['v1', 'v2'].map((v) => ({ name: v, labels: { version: v } })),
            },
          }) +
          object({
            apiVersion: 'networking.istio.io/v1',
            kind: 'VirtualService',
            metadata: { name: 'echo-all', namespace: 'l7' },
            spec: {
              hosts: ['echo-all'],
              http: [
                {
                  match: [{ headers: { 'x-subset': { exact: 'v2' } } }],
                  route: [{ destination: { host: 'echo-all', subset: 'v2' } }],
                },
                { route: [{ destination: { host: 'echo-all', subset: 'v1' } }] },
              ],
            },
          }) +
          object({
            apiVersion: 'security.istio.io/v1',
            kind: 'AuthorizationPolicy',
            metadata: { name: 'no-admin-delete', namespace: 'l7' },
            spec: {
              targetRefs: [echoRef],
              action: 'DENY',
              rules: [{ to: [{ operation: { methods: ['DELETE'], paths: ['/admin*'] } }] }],
            },
          }) +
          object({
            apiVersion: 'security.istio.io/v1',
            kind: 'RequestAuthentication',
            metadata: { name: 'jwt', namespace: 'l7' },
            spec: {
              targetRefs: [echoRef],
              jwtRules: [{ issuer: 'testing@secure.istio.io', jwks: JSON.stringify(jwt.jwks) }],
            },
          }) +
          object({
            apiVersion: 'security.istio.io/v1',
            kind: 'AuthorizationPolicy',
            metadata: { name: 'secure-needs-jwt', namespace: 'l7' },
            spec: {
              targetRefs: [echoRef],
              action: 'DENY',
              rules: [
                { from: [{ source: { notRequestPrincipals: ['*'] } }], to: [{ operation: { paths: ['/secure*'] } }] },
              ],
            },
          }),
      );
      const ok = async (...args: string[]): Promise<void> => {
        const r = await kubectl(...args);
        assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
      };
      await ok('apply', '-f', l7);
      const kubeconfig = path.join(dataDir, 'kubeconfig');
      const applied = await amesh(
        host,
        'waypoint',
        'apply',
        '-n',
        'l7',
        '--enroll-namespace',
        '--wait',
        '--kubeconfig',
        kubeconfig,
      );
      assert.equal(applied.status, 0, applied.stderr);
      await ok('rollout', 'status', '-n', 'l7', 'deployment/echo-v1', 'deployment/echo-v2', '--timeout=120s');
      /** curl in the client pod: the status code, then the body. */
      const curl = async (p: string, ...args: string[]): Promise<string> => {
        const url = p.startsWith('http') ? p : `http://echo.l7${p}`;
        const r = await amesh(
          host,
          'exec',
          '--data-dir',
          dataDir,
          CLIENT,
          '--',
          'curl',
          '-s',
          '-m',
          '5',
          '-w',
          ' %{http_code}',
          ...args,
          url,
        );
        return r.stdout;
      };
      let got = '';
      await waitFor(
        "the VirtualService sends x-subset: v2 to the DestinationRule's v2 subset through the waypoint",
        async () => /"hostname":"v2".* 200$/.test((got = await curl('http://echo-all.l7/', '-H', 'x-subset: v2'))),
        CHANGE_DEADLINE_MS,
      ).catch(() => assert.fail(got));
      for (let i = 0; i < 4; i++)
        assert.match(await curl('http://echo-all.l7/'), /"hostname":"v1".* 200$/, 'every other request: subset v1');
      await waitFor(
        'the HTTPRoute sends x-version: v2 to echo-v2 through the waypoint',
        async () => /"hostname":"v2".* 200$/.test((got = await curl('/', '-H', 'x-version: v2'))),
        CHANGE_DEADLINE_MS,
      ).catch(() => assert.fail(got));
      assert.match(await curl('/'), /"hostname":"v1".* 200$/);
      await waitFor(
        'DELETE /admin refused by the waypoint',
        async () => (got = await curl('/admin', '-X', 'DELETE')) === 'RBAC: access denied 403',
        CHANGE_DEADLINE_MS,
      ).catch(() => assert.fail(got));
      assert.match(await curl('/admin'), / 200$/);
      assert.equal(await curl('/secure'), 'RBAC: access denied 403', 'no token: no request principal');
      assert.equal(await curl('/secure', '-H', `Authorization: Bearer ${jwt.expired}`), 'Jwt is expired 401');
      assert.equal(await curl('/secure', '-H', `Authorization: Bearer ${jwt.other_key}`), 'Jwt verification fails 401');
      const secure = await curl('/secure', '-H', `Authorization: Bearer ${jwt.valid}`);
      assert.match(secure, /"hostname":"v1".* 200$/);
      assert.doesNotMatch(secure, /authorization/i, 'the verified token is not forwarded');

      // ext_authz: Istio's sample provider (amesh x extauthz) as meshConfig's HTTP and gRPC providers.
      const mesh = parse(await jsonpath('istio-system', 'configmap', 'istio', '{.data.mesh}')) as Record<
        string,
        unknown
      >;
      const provider = (kind: string, port: number): Record<string, unknown> => ({
        service: 'ext-authz.l7.svc.cluster.local',
        port,
        ...(kind === 'envoyExtAuthzHttp'
          ? { includeRequestHeadersInCheck: ['x-ext-authz'], headersToUpstreamOnAllow: ['x-ext-authz-check-result'] }
          : {}),
      });
      mesh['extensionProviders'] = [
        { name: 'sample-http', envoyExtAuthzHttp: provider('envoyExtAuthzHttp', 8000) },
        { name: 'sample-grpc', envoyExtAuthzGrpc: provider('envoyExtAuthzGrpc', 9000) },
      ];
      await ok(
        'patch',
        'configmap',
        '-n',
        'istio-system',
        'istio',
        '--type',
        'merge',
        '-p',
        JSON.stringify({ data: { mesh: stringify(mesh) } }),
      );
      const custom = (name: string, prefix: string): string =>
        object({
          apiVersion: 'security.istio.io/v1',
          kind: 'AuthorizationPolicy',
          metadata: { name: `ext-${name}`, namespace: 'l7' },
          spec: {
            targetRefs: [echoRef],
            action: 'CUSTOM',
            provider: { name },
            rules: [{ to: [{ operation: { paths: [`${prefix}*`] } }] }],
          },
        });
      const extAuthz = path.join(dir, 'ext-authz.yaml');
      await writeFile(
        extAuthz,
        object({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'ext-authz', namespace: 'l7' },
          spec: {
            selector: { matchLabels: { app: 'ext-authz' } },
            template: {
              metadata: { labels: { app: 'ext-authz' } },
              spec: {
                containers: [
                  {
                    name: 'ext-authz',
                    image: 'amesh',
                    command: ['amesh', 'x', 'extauthz'],
                    ports: [{ containerPort: 8000 }, { containerPort: 9000 }],
                  },
                ],
              },
            },
          },
        }) +
          object({
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name: 'ext-authz', namespace: 'l7' },
            spec: {
              selector: { app: 'ext-authz' },
              ports: [
                { name: 'http', port: 8000 },
                { name: 'grpc', port: 9000 },
              ],
            },
          }) +
          custom('sample-http', '/ext-http') +
          custom('sample-grpc', '/ext-grpc'),
      );
      await ok('apply', '-f', extAuthz);
      await ok('rollout', 'status', '-n', 'l7', 'deployment/ext-authz', '--timeout=120s');
      const DENIED = 'denied by ext_authz for not found header `x-ext-authz: allow` in the request 403';
      await waitFor(
        'the HTTP provider refuses a request without x-ext-authz: allow',
        async () => (got = await curl('/ext-http')) === DENIED,
        CHANGE_DEADLINE_MS,
      ).catch(() => assert.fail(got));
      const allowed = await curl('/ext-http', '-H', 'x-ext-authz: allow');
      assert.match(allowed, /"x-ext-authz-check-result":"allowed".* 200$/, 'the check result is passed upstream');
      assert.equal(await curl('/ext-grpc'), DENIED, "the gRPC provider: client's account is not the allowed one");
      assert.match(await curl('/ext-grpc', '-H', 'x-ext-authz: allow'), /"hostname":"v1".* 200$/);
      // HTTP/2 with prior knowledge (curl) and gRPC (python3-grpcio) through the waypoint, on ports declared http2 and grpc.
      const H2C =
        "require('http2').createServer((q, r) => r.end(JSON.stringify({ version: q.httpVersion, id: q.headers['x-request-id'] }))).listen(8080)";
      const grpcEcho = path.join(packageRoot(), 'test', 'interop', 'grpc_echo.py');
      const h2 = path.join(dir, 'h2.yaml');
      const app = (name: string, command: string[], portName: string): string =>
        object({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name, namespace: 'l7' },
          spec: {
            selector: { matchLabels: { app: name } },
            template: {
              metadata: { labels: { app: name } },
              spec: { containers: [{ name, image: 'amesh', command, ports: [{ containerPort: SERVER_PORT }] }] },
            },
          },
        }) +
        object({
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name, namespace: 'l7' },
          spec: { selector: { app: name }, ports: [{ name: portName, port: SERVICE_PORT, targetPort: SERVER_PORT }] },
        });
      await writeFile(
        h2,
        app('h2c', ['node', '-e', H2C], 'http2') +
          app('grpc', ['/usr/bin/python3', grpcEcho, 'serve', String(SERVER_PORT)], 'grpc') +
          object({
            apiVersion: 'security.istio.io/v1',
            kind: 'AuthorizationPolicy',
            metadata: { name: 'no-forbidden', namespace: 'l7' },
            spec: {
              targetRefs: [{ group: '', kind: 'Service', name: 'grpc' }],
              action: 'DENY',
              rules: [{ to: [{ operation: { paths: ['/amesh.test.Echo/Forbidden'] } }] }],
            },
          }),
      );
      await ok('apply', '-f', h2);
      await ok('rollout', 'status', '-n', 'l7', 'deployment/h2c', 'deployment/grpc', '--timeout=120s');
      const inClient = async (...cmd: string[]): Promise<string> =>
        (await amesh(host, 'exec', '--data-dir', dataDir, CLIENT, '--', ...cmd)).stdout;
      await waitFor(
        'h2c through the waypoint: HTTP/2 end to end, with an x-request-id added',
        async () =>
          /^\{"version":"2.0","id":"[0-9a-f-]{36}"\} 200$/.test(
            (got = await inClient(
              'curl',
              '-s',
              '-m',
              '5',
              '--http2-prior-knowledge',
              '-w',
              ' %{http_code}',
              'http://h2c.l7/',
            )),
          ),
        CHANGE_DEADLINE_MS,
      ).catch(() => assert.fail(got));
      assert.equal(
        await inClient(
          '/usr/bin/python3',
          grpcEcho,
          'call',
          `grpc.l7.svc.cluster.local:${SERVICE_PORT}`,
          'Say',
          'hello',
        ),
        'OK hello\n',
      );
      assert.equal(
        await inClient(
          '/usr/bin/python3',
          grpcEcho,
          'call',
          `grpc.l7.svc.cluster.local:${SERVICE_PORT}`,
          'Missing',
          'x',
        ),
        'STATUS NOT_FOUND\n',
        "the upstream's gRPC status reaches the client in the trailers",
      );
      assert.equal(
        await inClient(
          '/usr/bin/python3',
          grpcEcho,
          'call',
          `grpc.l7.svc.cluster.local:${SERVICE_PORT}`,
          'Forbidden',
          'x',
        ),
        'STATUS PERMISSION_DENIED\n',
        "the waypoint's own 403 reaches a gRPC client as Envoy maps it",
      );

      const waypointIp = (
        await kubectl(
          'get',
          'pods',
          '-n',
          'l7',
          '-l',
          'gateway.networking.k8s.io/gateway-name=waypoint',
          '-o',
          'jsonpath={.items[0].status.podIP}',
        )
      ).stdout;
      const stats = await amesh(
        host,
        'exec',
        '--data-dir',
        dataDir,
        CLIENT,
        '--',
        'curl',
        '-s',
        '-m',
        '5',
        `http://${waypointIp}:15020/stats/prometheus`,
      );
      const counted = (code: string): number =>
        stats.stdout
          .split('\n')
          .filter(
            (l) =>
              l.startsWith('istio_requests_total{') &&
              l.includes('reporter="waypoint"') &&
              l.includes('destination_service_namespace="l7"') &&
              l.includes(`response_code="${code}"`),
          )
          .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
      assert.ok(counted('200') >= 6, stats.stdout);
      assert.ok(counted('403') >= 4, stats.stdout);
      assert.equal(counted('401'), 2, stats.stdout);
      const grpcSeries = stats.stdout
        .split('\n')
        .filter((l) => l.startsWith('istio_requests_total{') && l.includes('request_protocol="grpc"'));
      assert.ok(
        grpcSeries.some((l) => l.includes('grpc_response_status="5"') && l.includes('destination_service_name="grpc"')),
        grpcSeries.join('\n'),
      );
      assert.ok(
        grpcSeries.some((l) => l.includes('grpc_response_status="0"')),
        grpcSeries.join('\n'),
      );
      await ok('delete', 'namespace', 'l7');
    });

    test("an ingress Gateway of class istio: the host curls its LoadBalancer address over HTTPS with SNI and reaches a meshed pod over HBONE with the gateway's identity, in HTTP/1.1 and HTTP/2 (ALPN, and h2c on its HTTP listener), through the Service's waypoint when it sets istio.io/ingress-use-waypoint; TLS passed through by SNI and TCP reach theirs; an unknown name gets no certificate, a Secret the gateway may not read is refused through SAR, and a rotated Secret is served", async () => {
      const ok = async (...args: string[]): Promise<string> => {
        const r = await kubectl(...args);
        assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
        return r.stdout;
      };
      const first = await tlsSecret('ingress', 'shop-cert', ['*.shop.test']);
      const dbCert = await tlsSecret('shop', 'db-cert', ['db.shop.test']);
      const manifest = path.join(dir, 'ingress.yaml');
      await writeFile(
        manifest,
        namespaces('ingress') +
          first.yaml +
          ambientNamespace('shop') +
          deployment({
            name: 'web',
            namespace: 'shop',
            replicas: 1,
            container: {
              name: 'web',
              command: ['amesh', 'echo', 'server', '--address', `0.0.0.0:${SERVER_PORT}`, '--name', 'shop-web'],
              ports: { http: SERVER_PORT },
            },
          }) +
          object({
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name: 'web', namespace: 'shop' },
            spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: SERVICE_PORT, targetPort: SERVER_PORT }] },
          }) +
          // Only the gateway's identity may reach the shop: a request that came in plaintext would be refused.
          object({
            apiVersion: 'security.istio.io/v1',
            kind: 'AuthorizationPolicy',
            metadata: { name: 'from-ingress', namespace: 'shop' },
            spec: {
              action: 'ALLOW',
              rules: [{ from: [{ source: { principals: ['cluster.local/ns/ingress/sa/gw-istio'] } }] }],
            },
          }) +
          object({
            apiVersion: 'gateway.networking.k8s.io/v1',
            kind: 'Gateway',
            metadata: { name: 'gw', namespace: 'ingress' },
            spec: {
              gatewayClassName: 'istio',
              listeners: [
                {
                  name: 'https',
                  port: 443,
                  protocol: 'HTTPS',
                  hostname: '*.shop.test',
                  tls: { mode: 'Terminate', certificateRefs: [{ name: 'shop-cert' }] },
                  allowedRoutes: { namespaces: { from: 'All' } },
                },
                {
                  name: 'tls',
                  port: 8443,
                  protocol: 'TLS',
                  hostname: '*.shop.test',
                  tls: { mode: 'Passthrough' },
                  allowedRoutes: { namespaces: { from: 'All' } },
                },
                { name: 'tcp', port: 9000, protocol: 'TCP', allowedRoutes: { namespaces: { from: 'All' } } },
                {
                  name: 'http',
                  port: 80,
                  protocol: 'HTTP',
                  hostname: '*.shop.test',
                  allowedRoutes: { namespaces: { from: 'All' } },
                },
              ],
            },
          }) +
          dbCert.yaml +
          deployment({
            name: 'db',
            namespace: 'shop',
            replicas: 1,
            container: {
              name: 'db',
              // An HTTPS server with its own certificate: the gateway passes its TLS through untouched.
              command: [
                'node',
                '-e',
                "require('https').createServer({ cert: process.env.CRT, key: process.env.KEY }, (q, r) => r.end('db:' + q.headers.host)).listen(8443)",
              ],
              env: [
                { name: 'CRT', valueFrom: { secretKeyRef: { name: 'db-cert', key: 'tls.crt' } } },
                { name: 'KEY', valueFrom: { secretKeyRef: { name: 'db-cert', key: 'tls.key' } } },
              ],
              ports: { tls: 8443 },
            },
          }) +
          object({
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name: 'db', namespace: 'shop' },
            spec: { selector: { app: 'db' }, ports: [{ name: 'tls', port: 8443, targetPort: 8443 }] },
          }) +
          object({
            apiVersion: 'gateway.networking.k8s.io/v1',
            kind: 'TLSRoute',
            metadata: { name: 'db', namespace: 'shop' },
            spec: {
              parentRefs: [{ name: 'gw', namespace: 'ingress', sectionName: 'tls' }],
              hostnames: ['db.shop.test'],
              rules: [{ backendRefs: [{ name: 'db', port: 8443 }] }],
            },
          }) +
          object({
            apiVersion: 'gateway.networking.k8s.io/v1',
            kind: 'TCPRoute',
            metadata: { name: 'web', namespace: 'shop' },
            spec: {
              parentRefs: [{ name: 'gw', namespace: 'ingress', sectionName: 'tcp' }],
              rules: [{ backendRefs: [{ name: 'web', port: SERVICE_PORT }] }],
            },
          }) +
          object({
            apiVersion: 'gateway.networking.k8s.io/v1',
            kind: 'HTTPRoute',
            metadata: { name: 'web', namespace: 'shop' },
            spec: {
              parentRefs: [{ name: 'gw', namespace: 'ingress' }],
              hostnames: ['www.shop.test'],
              rules: [{ backendRefs: [{ name: 'web', port: SERVICE_PORT }] }],
            },
          }),
      );
      await ok('apply', '-f', manifest);
      await ok(
        'wait',
        '--for=condition=Programmed',
        '-n',
        'ingress',
        'gateways.gateway.networking.k8s.io/gw',
        '--timeout=120s',
      );
      await ok('rollout', 'status', '-n', 'shop', 'deployment/web', 'deployment/db', '--timeout=120s');
      const lb = await ok(
        'get',
        'gateways.gateway.networking.k8s.io',
        '-n',
        'ingress',
        'gw',
        '-o',
        'jsonpath={.status.addresses[0].value}',
      );
      assert.equal(
        await ok('get', 'service', '-n', 'ingress', 'gw-istio', '-o', 'jsonpath={.status.loadBalancer.ingress[0].ip}'),
        lb,
        "the Gateway's address is its LoadBalancer Service's",
      );
      const ca = path.join(dir, 'shop-ca.pem');
      /** curl on the host: the status code, then the body; or curl's error. */
      const curl = async (name: string): Promise<string> => {
        const r = await runToExit(
          'nsenter',
          [
            `--net=${host.path}`,
            '--',
            'curl',
            '-sS',
            '-m',
            '5',
            '--cacert',
            ca,
            '--resolve',
            `${name}:443:${lb}`,
            '-w',
            '\\n%{http_code}',
            `https://${name}/hello`,
          ],
          10_000,
        );
        return r.status === 0 ? r.stdout : `ERR ${r.stderr.trim()}`;
      };
      await writeFile(ca, first.certPem);
      /** The gateway's and istiod's logs about xDS and certificates, for a failure's message. */
      const istiod = await ok(
        'get',
        'pods',
        '-n',
        'istio-system',
        '-l',
        'app=istiod',
        '-o',
        'jsonpath={.items[0].metadata.name}',
      );
      const gatewayLogs = async (): Promise<string> => {
        const pod = await ok('get', 'pods', '-n', 'ingress', '-o', 'jsonpath={.items[0].metadata.name}');
        const logsOf = async (p: string): Promise<string> =>
          (await amesh(host, 'logs', '--data-dir', dataDir, p)).stdout
            .split('\n')
            .filter(
              (l) =>
                /xDS|sds|certificate|config applied|listener|informer|secret|\terror\t/.test(l) &&
                !l.includes('no certificate for the TLS'),
            )
            .slice(-30)
            .join('\n');
        const dump = await amesh(
          host,
          'exec',
          '--data-dir',
          dataDir,
          `ingress/${pod}`,
          '--',
          'curl',
          '-s',
          'http://127.0.0.1:15000/config_dump',
        );
        const gw = (JSON.parse(dump.stdout || '{}') as { workloadState?: { gateway?: unknown } }).workloadState
          ?.gateway;
        const conns = await amesh(
          host,
          'exec',
          '--data-dir',
          dataDir,
          `istio-system/${istiod}`,
          '--',
          'curl',
          '-s',
          'http://127.0.0.1:15014/debug/connections',
        );
        return `--- gateway\n${await logsOf(`ingress/${pod}`)}\n${JSON.stringify(gw)}\n--- istiod\n${await logsOf(`istio-system/${istiod}`)}\n${conns.stdout}`;
      };
      let got = '';
      await waitFor(
        'the host reaches the shop through the gateway',
        async () => (got = await curl('www.shop.test')).endsWith('\n200'),
        CHANGE_DEADLINE_MS,
      ).catch(async () => assert.fail(`${got}\n${await gatewayLogs()}`));
      assert.match(got, /"hostname":"shop-web"/);
      const gwIp = await ok(
        'get',
        'pods',
        '-n',
        'ingress',
        '-l',
        'gateway.networking.k8s.io/gateway-name=gw',
        '-o',
        'jsonpath={.items[0].status.podIP}',
      );
      assert.match(got, new RegExp(`"peer":"${gwIp.replaceAll('.', '\\.')}:`), 'the shop sees the gateway as its peer');
      assert.match(await curl('nope.other.test'), /^ERR .*(handshake|SSL)/i, 'no listener covers the name');

      // TLS passed through by SNI: the client sees the db's own certificate, which the gateway never held.
      const dbCa = path.join(dir, 'db-ca.pem');
      await writeFile(dbCa, dbCert.certPem);
      const onHost = async (...args: string[]): Promise<string> => {
        const r = await runToExit('nsenter', [`--net=${host.path}`, '--', 'curl', '-sS', '-m', '5', ...args], 10_000);
        return r.status === 0 ? r.stdout : `ERR ${r.stderr.trim()}`;
      };
      await waitFor(
        'the db reached through TLS passthrough',
        async () =>
          (got = await onHost(
            '--cacert',
            dbCa,
            '--resolve',
            `db.shop.test:8443:${lb}`,
            'https://db.shop.test:8443/',
          )) === 'db:db.shop.test:8443',
        CHANGE_DEADLINE_MS,
      ).catch(async () => assert.fail(`${got}\n${await gatewayLogs()}`));
      // TCP: the bytes are relayed as they are; the echo server answers the plain HTTP request.
      assert.match(await onHost(`http://${lb}:9000/tcp`), /"hostname":"shop-web".*"path":"\/tcp"/);
      // HTTP/2 from outside, as Istio's gateways take it: chosen by ALPN over TLS, and h2c with prior knowledge on
      // the HTTP listener; HTTP/1.1 there too. The shop's port is plain HTTP: the gateway speaks HTTP/1.1 to it.
      const version = '\n%{http_version}';
      assert.match(
        await onHost('--cacert', ca, '--resolve', `www.shop.test:443:${lb}`, '-w', version, 'https://www.shop.test/h2'),
        /"hostname":"shop-web".*"path":"\/h2".*\n2$/s,
      );
      const plain = ['--resolve', `www.shop.test:80:${lb}`, '-w', version];
      assert.match(
        await onHost('--http2-prior-knowledge', ...plain, 'http://www.shop.test/h2c'),
        /"hostname":"shop-web".*"path":"\/h2c".*\n2$/s,
      );
      assert.match(await onHost('--http1.1', ...plain, 'http://www.shop.test/h1'), /"path":"\/h1".*\n1\.1$/s);

      // istio.io/ingress-use-waypoint: a Service bound to a waypoint that asks for it is reached through the waypoint,
      // which the shop then sees as its peer (and lets in, beside the gateway).
      const waypointApplied = await amesh(
        host,
        'waypoint',
        'apply',
        '-n',
        'shop',
        '--wait',
        '--kubeconfig',
        path.join(dataDir, 'kubeconfig'),
      );
      assert.equal(waypointApplied.status, 0, waypointApplied.stderr);
      const viaWaypoint = path.join(dir, 'via-waypoint.yaml');
      await writeFile(
        viaWaypoint,
        object({
          apiVersion: 'v1',
          kind: 'Service',
          metadata: {
            name: 'web-wp',
            namespace: 'shop',
            labels: { 'istio.io/use-waypoint': 'waypoint', 'istio.io/ingress-use-waypoint': 'true' },
          },
          spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: SERVICE_PORT, targetPort: SERVER_PORT }] },
        }) +
          object({
            apiVersion: 'security.istio.io/v1',
            kind: 'AuthorizationPolicy',
            metadata: { name: 'from-waypoint', namespace: 'shop' },
            spec: {
              action: 'ALLOW',
              rules: [{ from: [{ source: { principals: ['cluster.local/ns/shop/sa/waypoint'] } }] }],
            },
          }) +
          object({
            apiVersion: 'gateway.networking.k8s.io/v1',
            kind: 'HTTPRoute',
            metadata: { name: 'web-wp', namespace: 'shop' },
            spec: {
              parentRefs: [{ name: 'gw', namespace: 'ingress', sectionName: 'https' }],
              hostnames: ['wp.shop.test'],
              rules: [{ backendRefs: [{ name: 'web-wp', port: SERVICE_PORT }] }],
            },
          }),
      );
      await ok('apply', '-f', viaWaypoint);
      const waypointIp = await ok(
        'get',
        'pods',
        '-n',
        'shop',
        '-l',
        'gateway.networking.k8s.io/gateway-name=waypoint',
        '-o',
        'jsonpath={.items[0].status.podIP}',
      );
      await waitFor(
        'the gateway reaches web-wp through its waypoint',
        async () => (got = await curl('wp.shop.test')).includes(`"peer":"${waypointIp}:`),
        CHANGE_DEADLINE_MS,
      ).catch(async () => assert.fail(`${got}\n${await gatewayLogs()}`));
      assert.match(
        await curl('www.shop.test'),
        new RegExp(`"peer":"${gwIp.replaceAll('.', '\\.')}:`),
        'web without it: straight',
      );

      // Istio's own Gateway on the same proxy: its credentialName is a Secret of the gateway's namespace, which
      // istiod serves only if a SubjectAccessReview lets the gateway's service account list Secrets. It may not.
      const restricted = path.join(dir, 'istio-gateway.yaml');
      await writeFile(
        restricted,
        (await tlsSecret('ingress', 'secret-cert', ['secret.shop.test'])).yaml +
          object({
            apiVersion: 'networking.istio.io/v1',
            kind: 'Gateway',
            metadata: { name: 'istio-gw', namespace: 'ingress' },
            spec: {
              selector: { 'gateway.networking.k8s.io/gateway-name': 'gw' },
              servers: [
                {
                  port: { number: 443, name: 'https', protocol: 'HTTPS' },
                  hosts: ['shop/secret.shop.test'],
                  tls: { mode: 'SIMPLE', credentialName: 'secret-cert' },
                },
              ],
            },
          }) +
          object({
            apiVersion: 'networking.istio.io/v1',
            kind: 'VirtualService',
            metadata: { name: 'secret', namespace: 'shop' },
            spec: {
              hosts: ['secret.shop.test'],
              gateways: ['ingress/istio-gw'],
              http: [{ route: [{ destination: { host: 'web', port: { number: SERVICE_PORT } } }] }],
            },
          }),
      );
      await ok('apply', '-f', restricted);
      await waitFor(
        'istiod refuses the gateway the Secret through the SubjectAccessReview',
        async () =>
          (await amesh(host, 'logs', '--data-dir', dataDir, `istio-system/${istiod}`)).stdout
            .split('\n')
            .some(
              (l) =>
                l.includes('proxy attempted to access unauthorized certificates') &&
                l.includes('kubernetes://secret-cert') &&
                l.includes('gw-istio/ingress is not authorized to read secrets'),
            ),
        CHANGE_DEADLINE_MS,
      ).catch(async () => assert.fail(await gatewayLogs()));
      assert.match(await curl('secret.shop.test'), /^ERR .*(handshake|SSL)/i, 'no certificate for the refused Secret');

      const rotated = await tlsSecret('ingress', 'shop-cert', ['www.shop.test']);
      const secret = path.join(dir, 'shop-cert.yaml');
      await writeFile(secret, rotated.yaml);
      await ok('apply', '-f', secret);
      await writeFile(ca, rotated.certPem);
      await waitFor(
        'the rotated certificate served',
        async () => (got = await curl('www.shop.test')).endsWith('\n200'),
        CHANGE_DEADLINE_MS,
      ).catch(async () => assert.fail(`${got}\n${await gatewayLogs()}`));
      await ok('delete', 'namespace', 'shop', 'ingress');
    });

    test('SIGHUP with stdout and stderr closed (the terminal is gone) tears the ambient cluster down: no namespace, link, route, iptables rule, ipset, process or data left', async () => {
      await assertTornDown(launched!, host, cluster, marker, clean, dataDir, { signal: 'SIGHUP', closeOutput: true });
    });
  },
);
