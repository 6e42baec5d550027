/**
 * `amesh up`: a whole cluster on one machine, as kind builds one from containers, then Istio's ambient profile
 * installed on it as `amesh install --set profile=ambient` installs it on any cluster (install-istio.ts); with
 * `--dataplane none` the bare cluster alone, as kind's `create cluster` leaves it. In the namespace `up` runs in
 * (the host): a bridge for the node network, the manifest directory applied to the API as `kubectl apply --prune`
 * would, kube-proxy's rules and the LoadBalancer allocator. Per node: its network namespace (node.ts) and its
 * kubelet, a process of its own that `up` restarts (node-service.ts, kubelet-process.ts), running the pods bound to
 * it, istiod's and the DaemonSets' included; node1's also runs the control plane as static pods
 * (control-plane-manifests.ts). Everything made outside this process is recorded in the data directory first
 * (resource-journal.ts), so `stop()`, or `amesh down` after a crash, removes all of it.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { chmod, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
  type V1Node,
  type V1Pod,
  type V1Service,
} from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { loadOrCreateClusterCredentials } from '../apiserver/auth/cluster-credentials.js';
import { ClusterIpAllocator } from '../apiserver/cluster-ip-allocator.js';
import { loadApiServerConfig } from '../apiserver/config.js';
import { PooledKubeConfig } from '../kube/pooled-kube-config.js';
import { DirectoryApplier } from '../istiod/registry/directory-applier.js';
import { RestartingInformer } from '../kube/informer.js';
import { listJson } from '../kube/list-json.js';
import { ignoreConflict } from '../kube/kube-status.js';
import { describeError, MeshError } from '../lib/errors.js';
import { LogControl } from '../lib/log.js';
import { ameshInvocation } from './amesh-invocation.js';
import { ClusterClaim } from './cluster-claim.js';
import { requireRoot } from './require-root.js';
import { consoleAlert } from './console-alerts.js';
import { parseNetworkConfigList } from './cni-runtime.js';
import { requireHostTools, type HostTool } from './host-tools.js';
import { KubeProxy } from './kube-proxy.js';
import { LoadBalancerAllocator } from './load-balancer.js';
import { clusterDnsIp, clusterDnsObjects, clusterDnsRbacObjects } from './cluster-dns-manifest.js';
import { applyRbac } from './apply-rbac.js';
import { installIstio, UP_PROFILE } from './install-istio.js';
import { APISERVER_PORT, controlPlanePods } from './control-plane-manifests.js';
import { waitForApiServer } from './wait-for-api-server.js';
import { CNI_PLUGIN_DIRS, nodeNetworkConfigFile } from './kubelet-process.js';
import { NodeService } from './node-service.js';
import { nodesRegistered } from './wait-for-nodes.js';
import { createHostBridge, hostBridgeName, nodeRecord, UpNode } from './node.js';
import { ResourceJournal } from './resource-journal.js';
import { RuncRuntime } from './runc-runtime.js';
import { ip } from './run-command.js';
import type { UpConfig } from './up-config.js';
import { UpDataDir } from './up-data-dir.js';

/** How long `up` waits for its API server's static pod to answer `/readyz`. */
const API_READY_SECONDS = 120;
/** kubeadm's role label of control-plane nodes. */
const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** How long a kubelet has to stop its pods when the cluster goes away, before it is killed. */
const KUBELET_STOP_MS = 60_000;
const SETTLE_POLL_MS = 250;
/**
 * What every node needs on the host: network namespaces, links and routes, entering them, and the CNI plugins of
 * its pod network.
 */
const CLUSTER_TOOLS: readonly HostTool[] = [
  { cmd: 'ip', pkg: 'iproute2', why: 'network namespaces, links and routes' },
  { cmd: 'nsenter', pkg: 'util-linux', why: "running each node's CNI chain and its agent's commands in its namespace" },
  {
    cmd: 'bridge',
    pkg: 'containernetworking-plugins',
    why: "the CNI plugin of each node's pod bridge",
    dirs: CNI_PLUGIN_DIRS,
  },
  {
    cmd: 'host-local',
    pkg: 'containernetworking-plugins',
    why: "the CNI plugin of each node's pod IPs",
    dirs: CNI_PLUGIN_DIRS,
  },
  { cmd: 'iptables-restore', pkg: 'iptables', why: "kube-proxy's Service rules on each node, the node agent's rules" },
  { cmd: 'runc', pkg: 'runc', why: 'the container runtime: each container in its own mount namespace' },
];
/** What the node agent runs on each node (its kubelet-probe set). */
const AMBIENT_TOOLS: readonly HostTool[] = [{ cmd: 'ipset', pkg: 'ipset', why: "the node agent's kubelet-probe set" }];

export interface StartOptions {
  /** Programs the caller will run on the host besides the cluster's, checked with them. */
  readonly hostTools?: readonly HostTool[];
}

/** One line of progress while the cluster starts or stops. */
export type Progress = (line: string) => void;

export interface ClusterSnapshot {
  readonly nodes: readonly V1Node[];
  readonly pods: readonly V1Pod[];
}

/**
 * The node's network configuration list, as a cluster's pod network leaves it before Istio: Debian's bridge with
 * host-local IPAM over the node's pod CIDR. istio-cni's node agent chains its plugin into it when installed.
 */
function nodeNetworkConfig(podCidr: string, ipamDir: string): string {
  const bridge = {
    type: 'bridge',
    bridge: 'cni0',
    isGateway: true,
    ipMasq: false,
    hairpinMode: true,
    ipam: { type: 'host-local', ranges: [[{ subnet: podCidr }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: ipamDir },
  };
  return JSON.stringify({ cniVersion: '1.0.0', name: 'amesh', plugins: [bridge] });
}

const podSettled = (p: V1Pod): boolean => {
  const phase = p.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return true;
  if ((p.spec?.nodeName ?? '') === '')
    return p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable') === true;
  // Stuck (a container that cannot be created, or crashes): the table says why; waiting longer shows nothing new.
  if (
    p.status?.containerStatuses?.some(
      (c) => c.state?.waiting?.reason !== undefined && c.state.waiting.reason !== 'ContainerCreating',
    ) === true
  )
    return true;
  return phase === 'Running' && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
};

const deploymentSettled = (d: V1Deployment): boolean => {
  const want = d.spec?.replicas ?? 1;
  return (
    (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1) &&
    (d.status?.updatedReplicas ?? 0) === want &&
    (d.status?.replicas ?? 0) === want
  );
};

export class Cluster {
  /** Cleanups of what has been started, run in reverse by `stop()`. */
  private readonly undo: { what: string; run: () => Promise<void> }[] = [];
  private kc: KubeConfig | undefined;
  private stopping: Promise<void> | undefined;
  /** The components' logging, into `up.log`; its errors also reach the console (console-alerts.ts). */
  private readonly logs: LogControl;
  /** How many lines of `up.log` reached the console. */
  private alerts = 0;

  private constructor(
    readonly cfg: UpConfig,
    readonly dataDir: UpDataDir,
    private readonly claim: ClusterClaim,
    private readonly logStream: WriteStream,
    private readonly progress: Progress,
  ) {
    this.logs = new LogControl({
      format: 'text',
      level: cfg.logLevel,
      component: 'up',
      out: logStream,
      tap: (entry) => this.alert(entry),
    });
  }

  /** Shows an error of `up.log` on the console too, until the teardown (whose errors are expected). */
  private alert(entry: Record<string, unknown>): void {
    if (this.stopping !== undefined) return;
    const line = consoleAlert(entry, this.dataDir.root);
    if (line === undefined) return;
    this.alerts++;
    this.progress(line);
  }

  get kubeconfig(): KubeConfig {
    if (this.kc === undefined) throw new Error('the cluster has not started');
    return this.kc;
  }

  /**
   * Starts the cluster; on any failure, removes what was made and rethrows. Nothing is touched before this process
   * holds the claim on its network namespace and name (cluster-claim.ts).
   */
  static async start(cfg: UpConfig, progress: Progress, o: StartOptions = {}): Promise<Cluster> {
    requireRoot('amesh up');
    requireHostTools([...CLUSTER_TOOLS, ...(cfg.dataplane === 'ambient' ? AMBIENT_TOOLS : []), ...(o.hostTools ?? [])]);
    const claim = await ClusterClaim.take(cfg);
    const dataDir = new UpDataDir(cfg.dataDir);
    let journal: ResourceJournal;
    try {
      await mkdir(cfg.dataDir, { recursive: true, mode: 0o700 });
      journal = await ResourceJournal.open(dataDir.journal);
    } catch (e) {
      await claim.release();
      throw e;
    }
    for (const l of dataDir.logs) await rm(l, { recursive: true, force: true });
    const logStream = createWriteStream(dataDir.logFile, { flags: 'a', mode: 0o600 });
    const c = new Cluster(cfg, dataDir, claim, logStream, progress);
    c.undo.push({
      what: 'what is left of the record of created resources',
      run: async () => {
        for (const r of await journal.close()) progress(`Removed ${r}`);
      },
    });
    try {
      await c.build(journal);
    } catch (e) {
      await c.stop();
      throw e;
    }
    return c;
  }

  private async build(journal: ResourceJournal): Promise<void> {
    const { cfg, dataDir, progress } = this;
    const records = Array.from({ length: cfg.nodes }, (_, i) => nodeRecord(cfg, i + 1));
    await dataDir.writeCluster({ name: cfg.name, hostIp: cfg.hostIp, nodes: records });

    progress(`Creating the node network: bridge ${hostBridgeName(cfg)} at ${cfg.hostIp} (${cfg.nodeCidr})`);
    await createHostBridge(cfg, journal);
    this.undo.push({
      what: `bridge ${hostBridgeName(cfg)}`,
      run: () => ip('link', 'del', hostBridgeName(cfg)).then(() => undefined),
    });
    const nodes: UpNode[] = [];
    for (const r of records) {
      progress(`Creating node ${r.name}: network namespace ${r.netns}, address ${r.ip}, pods ${r.podCidr}`);
      const node = await UpNode.create(cfg, nodes.length + 1, records, journal);
      nodes.push(node);
      this.undo.push({ what: `node ${r.name}`, run: () => node.remove() });
    }

    // kubeadm's certs and kubeconfig phases: the credentials exist before the API server runs, so the kubelets and
    // the control plane's clients have their kubeconfig from the start.
    const controlPlane = records[0]!;
    const apiCfg = loadApiServerConfig({ dataDir: dataDir.apiserverDir }, {});
    const credentials = await loadOrCreateClusterCredentials({
      dataDir: apiCfg.dataDir,
      listenHost: controlPlane.ip,
      listenPort: APISERVER_PORT,
      serviceIp: new ClusterIpAllocator(apiCfg.serviceCidr).kubernetesServiceIp,
    });
    await rm(dataDir.kubeconfig, { force: true });
    await symlink(path.relative(dataDir.root, credentials.kubeconfigPath), dataDir.kubeconfig);
    const kc = new PooledKubeConfig();
    kc.loadFromFile(credentials.kubeconfigPath);
    this.kc = kc;
    const manifestDir = dataDir.staticPodDir(controlPlane.name);
    await mkdir(manifestDir, { recursive: true, mode: 0o700 });
    const controlPlanePodList = controlPlanePods({
      nodeIp: controlPlane.ip,
      apiserverDir: apiCfg.dataDir,
      serviceCidr: apiCfg.serviceCidr,
      logLevel: cfg.logLevel,
    });
    for (const pod of controlPlanePodList)
      await writeFile(path.join(manifestDir, `${pod.metadata?.name ?? ''}.yaml`), stringify(pod), { mode: 0o600 });

    const runtime = new RuncRuntime(dataDir.runcRoot, cfg.name);
    // Root's alone: it holds the pods' secret and token volumes.
    await mkdir(dataDir.runtimeDir, { recursive: true });
    await chmod(dataDir.runtimeDir, 0o700);
    await journal.create({ t: 'cgroup', name: runtime.cgroup }, () => mkdir(dataDir.runcRoot, { recursive: true }));
    for (const r of records) {
      const file = nodeNetworkConfigFile(dataDir, r.name);
      const text = nodeNetworkConfig(r.podCidr, path.join(dataDir.nodeDir(r.name), 'cni', 'ipam'));
      parseNetworkConfigList(text, file);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, text, { mode: 0o644 });
    }
    const kubelets = records.map(
      (r) =>
        new NodeService({
          node: r.name,
          args: [
            '--data-dir',
            dataDir.root,
            '--hostname-override',
            r.name,
            ...(r.name === controlPlane.name ? ['--pod-manifest-path', manifestDir] : []),
            '--exit-on-stdin-close',
            '--log-level',
            cfg.logLevel,
          ],
          logs: this.logs,
        }),
    );
    for (const k of kubelets) k.start();
    this.undo.push({
      what: 'the kubelets (each stops its pods)',
      run: async () => {
        await Promise.all(kubelets.map((k) => k.stop(KUBELET_STOP_MS)));
      },
    });
    progress(
      `Control plane starting on ${controlPlane.name}: static pods ${controlPlanePodList.map((p) => `kube-system/${p.metadata?.name ?? ''}-${controlPlane.name}`).join(', ')} (${manifestDir})`,
    );
    await waitForApiServer(
      credentials,
      API_READY_SECONDS * 1000,
      `its log: ${ameshInvocation()} logs --data-dir ${dataDir.root} kube-system/kube-apiserver-${controlPlane.name}`,
    );
    progress(`API server ready at ${credentials.serverUrl} (kubectl --kubeconfig ${dataDir.kubeconfig})`);
    await nodesRegistered(kc, records, API_READY_SECONDS * 1000);
    // kubeadm's mark-control-plane phase: the role label (no taint, so that its node runs workloads, as kind's
    // single control-plane node does).
    await kc
      .makeApiClient(CoreV1Api)
      .patchNode(
        { name: controlPlane.name, body: { metadata: { labels: { [CONTROL_PLANE_LABEL]: '' } } } },
        MERGE_PATCH,
      );
    progress(
      `Kubelets running; nodes registered: ${nodes.map((n) => n.name).join(', ')} (control plane: ${controlPlane.name})`,
    );

    await this.addClusterDns(kc, apiCfg.serviceCidr);
    progress(`Cluster DNS: kube-system/kube-dns at ${clusterDnsIp(apiCfg.serviceCidr)} (amesh cluster-dns)`);

    const services = new RestartingInformer<V1Service>(
      kc,
      '/api/v1/services',
      () => listJson(kc, '/api/v1/services'),
      {},
      this.logs.scope('kube-proxy'),
    );
    const proxy = new KubeProxy(kc, services, records, cfg.clusterCidr, this.logs.scope('kube-proxy'));
    this.undo.push({ what: 'kube-proxy', run: () => proxy.stop() });
    await proxy.start();
    await proxy.synced;
    progress('kube-proxy: Service rules on every node');

    const lb = new LoadBalancerAllocator(
      kc,
      cfg.lbPool,
      { netns: records[0]!.netns, link: 'eth0' },
      this.logs.scope('load-balancer'),
    );
    this.undo.push({ what: 'the LoadBalancer allocator', run: () => lb.stop() });
    lb.start();
    await lb.synced;
    progress(`LoadBalancer addresses from ${cfg.lbPool.first}-${cfg.lbPool.last}, announced from ${records[0]!.name}`);

    if (cfg.dataplane === 'ambient') {
      progress(`Installing Istio: amesh install --set profile=${UP_PROFILE} (istiod, istio-cni, ztunnel)`);
      await installIstio(kc, progress);
    }

    progress(`Applying ${cfg.configDir}`);
    await this.applyManifests(kc);
  }

  /** Creates the cluster's DNS (kubeadm's CoreDNS objects, running `amesh cluster-dns`), as kind's cluster has it. */
  private async addClusterDns(kc: KubeConfig, serviceCidr: string): Promise<void> {
    const [account, deployment, service] = clusterDnsObjects({ serviceCidr });
    const core = kc.makeApiClient(CoreV1Api);
    const apps = kc.makeApiClient(AppsV1Api);
    const namespace = 'kube-system';
    const created = (p: Promise<unknown>): Promise<unknown> => p.catch(ignoreConflict);
    await applyRbac(kc, clusterDnsRbacObjects());
    await created(core.createNamespacedServiceAccount({ namespace, body: account }));
    await created(core.createNamespacedService({ namespace, body: service }));
    await created(apps.createNamespacedDeployment({ namespace, body: deployment }));
  }

  /**
   * Applies the manifest directory, then follows its changes, as `kubectl apply` would: what the API refuses (by
   * its schemas, or istiod's validating webhook) is reported. At start, an object the API refuses stops `up`: a
   * cluster that lacks part of its directory is not the one asked for.
   */
  private async applyManifests(kc: KubeConfig): Promise<void> {
    const alertsBefore = this.alerts;
    const manifests = await DirectoryApplier.start({ dir: this.cfg.configDir, kubeconfig: kc, logs: this.logs });
    this.undo.push({ what: 'the manifest watcher', run: () => manifests.stop() });
    if (manifests.initial.errors.length > 0)
      throw new MeshError(
        'UP_ERR_MANIFESTS',
        `the API refused objects of ${this.cfg.configDir}:\n  ${manifests.initial.errors.join('\n  ')}`,
      );
    const errors = this.alerts - alertsBefore;
    this.progress(
      `Applied ${String(manifests.initial.applied)} objects${errors === 0 ? '' : `; errors (above): ${String(errors)}`}`,
    );
  }

  /** Nodes and pods as the API has them now. */
  async snapshot(): Promise<ClusterSnapshot> {
    const [nodes, pods] = await Promise.all([
      listJson<V1Node>(this.kubeconfig, '/api/v1/nodes'),
      listJson<V1Pod>(this.kubeconfig, '/api/v1/pods'),
    ]);
    return { nodes: nodes.items, pods: pods.items };
  }

  /** Waits until every Deployment has its pods and every pod runs ready (or finished, or cannot be scheduled). */
  async settle(): Promise<boolean> {
    const deadline = Date.now() + this.cfg.waitSeconds * 1000;
    while (this.stopping === undefined) {
      const [deployments, { pods }] = await Promise.all([
        listJson<V1Deployment>(this.kubeconfig, '/apis/apps/v1/deployments'),
        this.snapshot(),
      ]);
      if (deployments.items.every(deploymentSettled) && pods.every(podSettled)) return true;
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
    }
    return false;
  }

  /** Tears everything down in reverse order; each step runs even when an earlier one failed. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (const u of this.undo.reverse()) {
        this.progress(`Removing ${u.what}`);
        await u.run().catch((e: unknown) => this.progress(`cannot remove ${u.what}: ${describeError(e)}`));
      }
      await new Promise((r) => this.logStream.end(r));
      for (const p of this.dataDir.created) await rm(p, { recursive: true, force: true });
      await this.claim.release();
      this.progress(logsKept(this.dataDir));
    })();
    return this.stopping;
  }
}

/** Where the logs of a cluster that is gone are, and how to read a container's. */
export function logsKept(dataDir: UpDataDir): string {
  return `Logs kept: ${dataDir.logFile}, and each container's in ${dataDir.podsDir} (${ameshInvocation()} logs --data-dir ${dataDir.root} NS/POD); the next amesh up with this --data-dir starts them afresh`;
}
