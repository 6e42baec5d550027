/**
 * The node agent against the embedded API server, with its node-level parts recorded (no root needed): what the
 * CNI plugin hands over is captured and annotated, a ztunnel that is not there leaves the pod `pending` with an
 * Event and the add retried until it is, labels enroll and un-enroll running pods, deleted pods leave ztunnel and
 * the probe ipset, a restarted agent sends the enrolled pods as its snapshot, and shutdown removes the host rules.
 * The same flows with the real rules and ZDS server in network namespaces are in cni-agent-netns.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { loadCniAgentConfig } from '../src/cni/agent/cni-agent-config.js';
import { CniAgent, type CniAgentParts, type ZdsServer } from '../src/cni/agent/cni-agent.js';
import type { PodTrafficOverrides } from '../src/cni/agent/pod-rules.js';
import type { SnapshotPod } from '../src/cni/agent/ztunnel-link.js';
import { isMeshError } from '../src/lib/errors.js';
import { cniPluginAddEvent } from '../src/cni/plugin/cni-plugin-add-event.js';
import { postCniAddEvent } from '../src/cni/plugin/plugin-event-client.js';
import { parsePrevResult } from '../src/cni/plugin/prev-result.js';
import type { WorkloadInfo } from '../src/zds/workload-info.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { startApiServer } from './helpers/in-process.js';
import { waitFor } from './helpers/mesh-fixture.js';

const NODE = 'node-a';
const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const LOOPBACK = '127.93.0.1';

/** Runs a synchronous change as the async operation the agent awaits. */
const done = (change: () => unknown): Promise<void> => {
  change();
  return Promise.resolve();
};

/** The node-level parts, recorded: which netns got rules, what ztunnel was sent, what the probe ipset holds. */
class RecordedNode implements CniAgentParts {
  readonly rulesIn = new Map<number, PodTrafficOverrides>();
  readonly probeIps = new Map<string, string>();
  hostRules = false;
  /** Pods with a process running, as a /proc scan would find them: uid → netns fd. */
  readonly running = new Map<string, number>();
  private nextFd = 1000;
  readonly zds = new RecordedZtunnel();

  readonly rules = {
    apply: (netns: number, o: PodTrafficOverrides) => done(() => this.rulesIn.set(netns, o)),
    remove: (netns: number) => done(() => this.rulesIn.delete(netns)),
  };
  readonly hostProbes = {
    create: () => done(() => (this.hostRules = true)),
    delete: () => done(() => ((this.hostRules = false), this.probeIps.clear())),
    addPod: (uid: string, ips: readonly string[]) => done(() => ips.forEach((ip) => this.probeIps.set(ip, uid))),
    removePod: (uid: string) =>
      done(() => [...this.probeIps].forEach(([ip, owner]) => owner === uid && this.probeIps.delete(ip))),
    prune: (uids: ReadonlySet<string>) =>
      done(() => [...this.probeIps].forEach(([ip, owner]) => uids.has(owner) || this.probeIps.delete(ip))),
  };
  /** The netns cache: fds by pod UID. */
  readonly open = new Map<string, number>();
  readonly netns = {
    open: (uid: string) => {
      const fd = this.open.get(uid) ?? this.nextFd++;
      this.open.set(uid, fd);
      return fd;
    },
    get: (uid: string) => this.open.get(uid),
    remove: (uid: string) => this.open.delete(uid),
    closeAll: () => this.open.clear(),
    scanProc: (pods: Iterable<{ uid: string }>) => {
      const found = new Map<string, number>();
      for (const p of pods) {
        const fd = this.running.get(p.uid);
        if (fd === undefined || this.open.has(p.uid)) continue;
        this.open.set(p.uid, fd);
        found.set(p.uid, fd);
      }
      return Promise.resolve(found);
    },
  };

  zdsServer(_socket: string, snapshot: () => SnapshotPod[]): ZdsServer {
    this.zds.snapshot = snapshot;
    return this.zds;
  }
}

/** ZDS as the agent sees it, with a switch for "no ztunnel connected". */
class RecordedZtunnel implements ZdsServer {
  connected = true;
  listening = false;
  snapshot: () => SnapshotPod[] = () => [];
  readonly workloads = new Map<string, { info: WorkloadInfo; netns: number }>();
  get ready(): boolean {
    return this.connected;
  }
  listen(): void {
    this.listening = true;
  }
  close(): void {
    this.listening = false;
  }
  addWorkload(uid: string, info: WorkloadInfo, netns: number): Promise<void> {
    if (!this.connected) return Promise.reject(new Error('no ztunnel connection'));
    this.workloads.set(uid, { info, netns });
    return Promise.resolve();
  }
  delWorkload(uid: string): Promise<void> {
    this.workloads.delete(uid);
    return Promise.resolve();
  }
}

describe('amesh cni-agent enrollment against the API server', () => {
  let dir: string;
  let api: ApiServer;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let node: RecordedNode;
  let agent: CniAgent;
  let logs: CapturedLogs;

  const config = () =>
    loadCniAgentConfig(
      { cniAgentRunDir: path.join(dir, 'run'), readinessAddress: `${LOOPBACK}:0`, monitoringAddress: `${LOOPBACK}:0` },
      { NODE_NAME: NODE, CNI_ENABLE_INSTALL: 'false' },
    );
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
        spec: { nodeName: NODE, serviceAccountName: 'sa-' + name, containers: [{ name: 'app', image: 'x' }] },
      },
    });
    await core.patchNamespacedPodStatus(
      { name, namespace, body: { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] } } },
      MERGE,
    );
    return p.metadata?.uid ?? '';
  };
  const labelNamespace = (name: string, labels: Record<string, string | null>) =>
    core.patchNamespace({ name, body: { metadata: { labels } } }, MERGE);
  const event = (namespace: string, name: string, ip: string) =>
    cniPluginAddEvent(
      `/var/run/netns/cni-${name}`,
      name,
      namespace,
      parsePrevResult({ ips: [{ address: `${ip}/24` }] }).ips,
    );

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-cni-agent-'));
    api = await startApiServer(path.join(dir, 'data'));
    kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    for (const [name, labels] of [
      ['shop', { 'istio.io/dataplane-mode': 'ambient' }],
      ['web', {}],
      ['plain', {}],
    ] as const) {
      await core.createNamespace({ body: { metadata: { name, labels } } });
    }
    node = new RecordedNode();
    logs = new CapturedLogs('cni-agent', 'debug');
    agent = await CniAgent.start(config(), kc, node, logs.control);
  });

  after(async () => {
    await agent.stop();
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('startup: the plugin kubeconfig is written (0600), host rules are in, the agent is ready', async () => {
    const written = new k8s.KubeConfig();
    written.loadFromString(await readFile(config().pluginKubeconfig, 'utf8'));
    assert.equal(written.getCurrentCluster()?.server, kc.getCurrentCluster()?.server);
    assert.equal(node.hostRules, true);
    assert.equal(agent.ready, true);
  });

  test('a pod the plugin hands over gets its rules, ztunnel, its probe IP and redirection: enabled', async () => {
    const uid = await createPod('shop', 'cart-0', '10.244.0.10');
    await postCniAddEvent(config().pluginSocket, event('shop', 'cart-0', '10.244.0.10'));
    const zt = node.zds.workloads.get(uid);
    assert.deepEqual(zt?.info, { name: 'cart-0', namespace: 'shop', serviceAccount: 'sa-cart-0' });
    assert.deepEqual(node.rulesIn.get(zt.netns), {
      ingressMode: false,
      dnsCapture: undefined,
      virtualInterfaces: [],
      warnings: [],
    });
    assert.equal(node.probeIps.get('10.244.0.10'), uid);
    assert.equal(await annotation('shop', 'cart-0'), 'enabled');
    assert.ok(
      node.zds.snapshot().some((p) => p.uid === uid && p.netns === zt.netns),
      'the pod is in the snapshot a connecting ztunnel gets',
    );
  });

  test('a pod the selectors do not select is refused: 500 "unexpectedly not eligible", nothing applied', async () => {
    const uid = await createPod('plain', 'other-0', '10.244.0.11');
    await assert.rejects(
      postCniAddEvent(config().pluginSocket, event('plain', 'other-0', '10.244.0.11')),
      (e: unknown) => isMeshError(e, 'CNI_ERR_CAPTURE_FAILED') && e.message.includes('unexpectedly not eligible'),
    );
    assert.equal(node.zds.workloads.has(uid), false);
    assert.equal(await annotation('plain', 'other-0'), undefined);
  });

  test('ztunnel not connected: the ADD fails, the pod is pending with an Event, and is added once ztunnel is there', async () => {
    node.zds.connected = false;
    const uid = await createPod('shop', 'late-0', '10.244.0.12');
    await assert.rejects(
      postCniAddEvent(config().pluginSocket, event('shop', 'late-0', '10.244.0.12')),
      (e: unknown) => isMeshError(e, 'CNI_ERR_CAPTURE_FAILED') && e.message.includes('AGENT_ERR_ZTUNNEL'),
    );
    assert.equal(await annotation('shop', 'late-0'), 'pending');
    await logs.waitFor(
      'the pending pod retried 3 times',
      (l) => l['message'] === 'reconcile failed; retrying' && l['key'] === 'pod:shop/late-0' && l['attempts'] === 3,
    );
    const events = (await core.listNamespacedEvent({ namespace: 'shop' })).items.filter(
      (e) => e.involvedObject.name === 'late-0',
    );
    assert.equal(events.length, 1, 'one Event when the pod becomes pending, not one per retry');
    assert.deepEqual(
      [events[0]?.reason, events[0]?.type, events[0]?.involvedObject.uid],
      ['ZtunnelAddFailed', 'Warning', uid],
    );
    assert.match(events[0]?.message ?? '', /no ztunnel connection/);
    node.zds.connected = true;
    await waitFor('late-0 enabled', async () => (await annotation('shop', 'late-0')) === 'enabled', 10_000);
    assert.equal(node.zds.workloads.has(uid), true);
    assert.equal(node.probeIps.get('10.244.0.12'), uid);
  });

  test("labelling a running pod's namespace enrolls it; labelling the pod dataplane-mode=none un-enrolls it", async () => {
    const uid = await createPod('web', 'front-0', '10.244.0.13');
    node.running.set(uid, 77);
    await labelNamespace('web', { 'istio.io/dataplane-mode': 'ambient' });
    await waitFor('front-0 enabled', async () => (await annotation('web', 'front-0')) === 'enabled');
    assert.deepEqual(
      [node.zds.workloads.get(uid)?.netns, node.rulesIn.has(77), node.probeIps.get('10.244.0.13')],
      [77, true, uid],
    );
    await core.patchNamespacedPod(
      { name: 'front-0', namespace: 'web', body: { metadata: { labels: { 'istio.io/dataplane-mode': 'none' } } } },
      MERGE,
    );
    await waitFor('front-0 un-enrolled', async () => (await annotation('web', 'front-0')) === undefined);
    assert.deepEqual(
      [node.zds.workloads.has(uid), node.rulesIn.has(77), node.probeIps.has('10.244.0.13')],
      [false, false, false],
    );
  });

  test('removing the namespace label un-enrolls its pods', async () => {
    const uid = await createPod('web', 'front-1', '10.244.0.14');
    node.running.set(uid, 78);
    await waitFor('front-1 enabled', async () => (await annotation('web', 'front-1')) === 'enabled');
    await labelNamespace('web', { 'istio.io/dataplane-mode': null });
    await waitFor('front-1 un-enrolled', async () => (await annotation('web', 'front-1')) === undefined);
    assert.deepEqual([node.zds.workloads.has(uid), node.rulesIn.has(78)], [false, false]);
  });

  test('a deleted enrolled pod leaves ztunnel and the probe ipset (its rules go with its netns)', async () => {
    const uid = await createPod('shop', 'gone-0', '10.244.0.15');
    await postCniAddEvent(config().pluginSocket, event('shop', 'gone-0', '10.244.0.15'));
    const fd = node.zds.workloads.get(uid)?.netns ?? -1;
    // The test is the pod's kubelet: it confirms the deletion at once.
    await core.deleteNamespacedPod({ name: 'gone-0', namespace: 'shop', gracePeriodSeconds: 0 });
    await waitFor('gone-0 out of ztunnel', () => !node.zds.workloads.has(uid));
    assert.deepEqual([node.probeIps.has('10.244.0.15'), node.rulesIn.has(fd)], [false, true]);
  });

  test('a pod that terminates (Succeeded) is removed as if deleted', async () => {
    const uid = await createPod('shop', 'job-0', '10.244.0.16');
    await postCniAddEvent(config().pluginSocket, event('shop', 'job-0', '10.244.0.16'));
    await core.patchNamespacedPodStatus(
      { name: 'job-0', namespace: 'shop', body: { status: { phase: 'Succeeded', podIP: null, podIPs: null } } },
      MERGE,
    );
    await waitFor('job-0 out of ztunnel', () => !node.zds.workloads.has(uid));
    assert.equal(node.probeIps.has('10.244.0.16'), false, 'removed by the IP of its last version that had one');
  });

  test('a restarted agent sends the enrolled pods, netns from /proc, as its snapshot; shutdown removes the host rules', async () => {
    await agent.stop();
    assert.equal(node.hostRules, false, 'no DaemonSet: not an upgrade, host rules removed');
    const cart = (await core.readNamespacedPod({ name: 'cart-0', namespace: 'shop' })).metadata?.uid ?? '';
    node.running.set(cart, 91);
    const restarted = new RecordedNode();
    for (const [uid, fd] of node.running) restarted.running.set(uid, fd);
    node = restarted;
    agent = await CniAgent.start(config(), kc, node, logs.control);
    const snap = node.zds.snapshot();
    assert.deepEqual(
      snap.find((p) => p.uid === cart),
      { uid: cart, info: { name: 'cart-0', namespace: 'shop', serviceAccount: 'sa-cart-0' }, netns: 91 },
    );
    assert.equal(node.rulesIn.has(91), true, 'rules reconciled at startup');
    assert.equal(node.probeIps.get('10.244.0.10'), cart, 'probe ipset rebuilt');
    assert.equal(
      snap.some((p) => p.info.name === 'gone-0' || p.info.name === 'other-0'),
      false,
    );
  });
});
