/**
 * The kubelet role of one node of `amesh up`: it registers its Node (podCIDR, InternalIP, Ready), renews its
 * Lease as its heartbeat (node-lease.ts), watches the pods bound to it (`spec.nodeName`), and runs each pod as
 * kubelet and a container runtime would: a network namespace as the sandbox, the node's CNI chain (ADD on create,
 * DEL on removal) run inside the node's namespace, the pod's volumes (pod-volumes.ts) and its own hosts and
 * resolv.conf files (pod-dns-files.ts), the containers run by runc (runc-runtime.ts) in the sandbox's network
 * namespace and their own mount namespaces, with their securityContext (security-context.ts) and env
 * (container-env.ts), init containers run one at a time before the app containers, each container's probes and
 * preStop hook (pod-container.ts), and the pod's status (IPs, hostIP, phase, conditions, initContainerStatuses,
 * containerStatuses) written through `pods/status`. A volume that cannot be set up is a FailedMount Event and is
 * tried again with back-off. A deleted pod's processes are stopped, its CNI DEL run and its namespace and runtime
 * files removed.
 */
import { existsSync } from 'node:fs';
import pLimit, { type LimitFunction } from 'p-limit';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1Container,
  type V1Pod,
  type V1PodCondition,
  type V1PodStatus,
} from '@kubernetes/client-node';
import { systemClock, type Clock } from '../controllers/clock.js';
import { EventRecorder } from '../kube/event-recorder.js';
import { RestartingInformer } from '../kube/informer.js';
import { requestToken } from '../kube/request-token.js';
import { listJson } from '../kube/list-json.js';
import { Backoff } from '../lib/backoff.js';
import { describeError } from '../lib/errors.js';
import { kubeTime } from '../lib/kube-time.js';
import type { Logger } from '../lib/log.js';
import { VERSION } from '../lib/version.js';
import { loadNetworkConfig, type CniRuntime, type NetworkConfigList } from './cni-runtime.js';
import { containerArgv, containerEnv } from './container-env.js';
import { localImageCommand } from './local-image.js';
import { resolveCommand } from './host-tools.js';
import type { KubeletSources } from './kubelet-sources.js';
import { isMirrorPod, MirrorClient, mirrorHash } from './mirror-client.js';
import { NodeLease } from './node-lease.js';
import type { ContainerMount } from './oci-spec.js';
import { podHostname, podHostsFile, podResolvConf } from './pod-dns-files.js';
import { PodVolumes, type TokenRequestFor } from './pod-volumes.js';
import { PodContainer } from './pod-container.js';
import { ContainerCreateError, type ContainerLauncher, type RestartPolicy } from './processes.js';
import type { RuncRuntime } from './runc-runtime.js';
import { containerCredentials } from './security-context.js';
import { deleteNetns, type ResourceJournal } from './resource-journal.js';
import { CONFIG_HASH_ANNOTATION, readStaticPods } from './static-pod-source.js';
import { ip } from './run-command.js';
import { applyPodSysctls, podSysctls } from './pod-sysctls.js';
import { readSandboxRecord, type NodeRecord, type UpDataDir } from './up-data-dir.js';

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** Sandbox creation retries: quick at first (an agent still starting), then as kubelet's pod worker backs off. */
const SANDBOX_RETRY_INITIAL_MS = 1_000;
const SANDBOX_RETRY_MAX_MS = 30_000;
/** Volume mount retries, as kubelet's volume manager backs off (to about 2 minutes). */
const MOUNT_RETRY_INITIAL_MS = 500;
const MOUNT_RETRY_MAX_MS = 122_000;
/**
 * Pod networks set up at once on a node. Each is a CNI chain of processes (amesh-cni a Node process, then the node
 * agent's in-pod rules and ztunnel's listeners); a burst of them all at once, as a 100-replica Deployment brings,
 * makes the agent miss the plugin's 5 s deadline (Istio's cnieventclient.go has the same), and every miss is a
 * sandbox torn down and made again: a retry storm instead of a queue.
 */
const SANDBOX_CONCURRENCY = 3;
/** Status writes the API did not take are tried again, from at once to kubelet's status sync period (10 s). */
const STATUS_RETRY_INITIAL_MS = 250;
const STATUS_RETRY_MAX_MS = 10_000;
/** The cluster's DNS Service: pods with dnsPolicy ClusterFirst get its address as their nameserver. */
const KUBE_DNS = { namespace: 'kube-system', name: 'kube-dns' } as const;
/** Kubernetes' default terminationGracePeriodSeconds. */
const DEFAULT_GRACE_SECONDS = 30;
/** The interface name kubelet asks CNI for in every pod. */
const POD_IFNAME = 'eth0';

/** What the kubelet reports as the node's software (kubectl get nodes -o wide). */
const KUBELET_VERSION = `v1.32.0+amesh.${VERSION}`;

export interface KubeletOptions {
  readonly kc: KubeConfig;
  readonly cluster: string;
  readonly node: NodeRecord;
  readonly nodeNetnsPath: string;
  readonly dataDir: UpDataDir;
  readonly journal: ResourceJournal;
  /** The node's /etc/cni/net.d, where its network configuration is. */
  readonly cniConfDir: string;
  readonly cni: CniRuntime;
  /** What containers of the amesh image run as its `amesh` (local-image.ts). */
  readonly imageLauncher: string;
  /** Where the hostPaths of this node's pods are (node-filesystem.ts). */
  readonly hostPath: (p: string) => string;
  /** The cluster's Services, ConfigMaps and Secrets. */
  readonly sources: KubeletSources;
  readonly runtime: RuncRuntime;
  /** The node's own resolv.conf, which pods with dnsPolicy Default get. */
  readonly nodeResolvConf: string;
  /** The directory of this node's static pods (kubelet's `staticPodPath`), if it has one. */
  readonly staticPodPath?: string;
  readonly clock?: Clock;
  readonly log: Logger;
}

const condition = (type: string, ok: boolean, since: number, reason?: string, message?: string): V1PodCondition =>
  ({
    type,
    status: ok ? 'True' : 'False',
    lastProbeTime: null,
    lastTransitionTime: kubeTime(since),
    ...(reason === undefined ? {} : { reason }),
    ...(message === undefined ? {} : { message }),
  }) as unknown as V1PodCondition;

/** One pod on this node: its sandbox, containers and probes, and the status it reports. */
class PodWorker {
  private readonly netns: string;
  /** `hostNetwork: true`: the pod shares the node's namespace and address; no sandbox, no CNI. */
  private readonly hostNetwork: boolean;
  private podIp: string | undefined;
  /** Whether this worker made the sandbox's namespace (a failed `ip netns add` made nothing to remove). */
  private netnsMade = false;
  private sandboxError: string | undefined;
  /** The network configuration the sandbox's ADD ran with, which its DEL runs with. */
  private network: NetworkConfigList | undefined;
  private readonly containers: PodContainer[] = [];
  /** The init containers started so far, in order. */
  private readonly initContainers: PodContainer[] = [];
  /** When the last init container completed (the Initialized condition's transition). */
  private initializedAt: number | undefined;
  private initFailed = false;
  /** Ends the wait for the running init container (the pod is going away). */
  private wakeInit: (() => void) | undefined;
  private readonly retry = new Backoff(SANDBOX_RETRY_INITIAL_MS, SANDBOX_RETRY_MAX_MS);
  private retryTimer: NodeJS.Timeout | undefined;
  private terminating = false;
  private readonly created = Date.now();
  private readyChanged = Date.now();
  private lastReady = false;
  private statusWriting = false;
  private statusDirty = false;
  private statusIdle: Promise<void> = Promise.resolve();
  private readonly statusRetry = new Backoff(STATUS_RETRY_INITIAL_MS, STATUS_RETRY_MAX_MS);
  private statusTimer: NodeJS.Timeout | undefined;
  private statusFailing = false;
  private readonly dir: string;
  /** The pod's runtime files: volumes, its hosts and resolv.conf, and its containers' bundles. */
  private readonly runDir: string;
  private volumes: PodVolumes | undefined;
  private mountError: string | undefined;
  private readonly mountRetry = new Backoff(MOUNT_RETRY_INITIAL_MS, MOUNT_RETRY_MAX_MS);
  private wake: (() => void) | undefined;
  private readonly log: Logger;
  private readonly started: Promise<void>;

  constructor(
    private pod: V1Pod,
    private readonly k: KubeletOptions,
    private readonly core: CoreV1Api,
    private readonly events: EventRecorder,
    /** Runs a sandbox's network setup within the node's limit (SANDBOX_CONCURRENCY). */
    private readonly sandboxes: LimitFunction,
    /** Only to take over what an earlier kubelet left of a pod that is going away: nothing new is made. */
    private readonly takeOverOnly = false,
  ) {
    const { namespace = '', name = '', uid = '' } = pod.metadata ?? {};
    this.hostNetwork = pod.spec?.hostNetwork === true;
    this.netns = this.hostNetwork ? k.node.netns : `${k.cluster}-pod-${uid}`;
    this.dir = k.dataDir.podDir(namespace, name, uid);
    this.runDir = k.dataDir.podRuntimeDir(uid);
    this.log = k.log.child({ pod: `${namespace}/${name}` });
    this.started = this.createSandbox();
  }

  get namespace(): string {
    return this.pod.metadata?.namespace ?? '';
  }

  private get at(): { containerId: string; netns: string; ifName: string; args: Record<string, string> } {
    const { namespace = '', name = '', uid = '' } = this.pod.metadata ?? {};
    return {
      containerId: uid,
      netns: `/run/netns/${this.netns}`,
      ifName: POD_IFNAME,
      args: { K8S_POD_NAMESPACE: namespace, K8S_POD_NAME: name, K8S_POD_INFRA_CONTAINER_ID: uid, K8S_POD_UID: uid },
    };
  }

  /**
   * A newer version of the pod. Its status is this worker's to say: a Ready condition that someone else changed
   * (the node lifecycle controller marks a silent node's pods not Ready) is written back, as kubelet's status
   * manager reconciles it.
   */
  update(pod: V1Pod): void {
    const before = this.pod.metadata;
    this.pod = pod;
    const meta = pod.metadata;
    if (
      this.volumes !== undefined &&
      (JSON.stringify(before?.labels) !== JSON.stringify(meta?.labels) ||
        JSON.stringify(before?.annotations) !== JSON.stringify(meta?.annotations))
    )
      void this.volumes.refresh(pod);
    this.reconcileStatus(pod);
  }

  /**
   * Writes the status again when the API's copy of the pod (`apiPod`: the pod itself, or a static pod's mirror)
   * lacks it or has another Ready condition.
   */
  reconcileStatus(apiPod: V1Pod): void {
    const apiReady = apiPod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
    const unwritten = apiPod.status?.hostIP === undefined && this.podIp !== undefined;
    if ((unwritten || apiReady !== this.lastReady) && !this.statusWriting) this.writeStatus();
  }

  /** Creates the sandbox and starts the containers; a failed sandbox is removed and retried with back-off. */
  private async createSandbox(): Promise<void> {
    if (this.terminating) return;
    const { namespace = '', name = '', uid = '' } = this.pod.metadata ?? {};
    let podIp: string;
    let adopted: string | undefined;
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      adopted = await this.adoptSandbox();
      if (this.takeOverOnly) {
        if (adopted !== undefined) this.takeOverContainers(adopted);
        return;
      }
      if (this.hostNetwork) podSysctls(this.pod);
      const address = adopted ?? (this.hostNetwork ? this.k.node.ip : await this.sandboxes(() => this.addNetwork()));
      this.podIp = podIp = address;
      this.sandboxError = undefined;
      const containers = (this.pod.spec?.containers ?? []).map((c) => c.name);
      await this.k.dataDir.writeSandbox(this.dir, {
        namespace,
        name,
        uid,
        node: this.k.node.name,
        netns: this.netns,
        ip: address,
        containers,
      });
      this.log.info({ ip: address, netns: this.netns }, adopted === undefined ? 'sandbox ready' : 'sandbox taken over');
    } catch (e) {
      this.sandboxError = describeError(e);
      this.log.warn({ error: this.sandboxError }, 'FailedCreatePodSandBox');
      this.writeStatus();
      await this.removeSandbox();
      if (!this.terminating) {
        this.retryTimer = setTimeout(() => void this.createSandbox(), this.retry.next());
      }
      return;
    }
    // A pod whose app containers an earlier kubelet started has run its init containers.
    const initialized =
      adopted !== undefined &&
      (this.pod.spec?.containers ?? []).some((c) => existsSync(this.containerFile(c.name, 'json')));
    if (initialized) this.initializedAt = Date.now();
    if (this.terminating || !(await this.mountVolumes(podIp))) return;
    if (!initialized && !(await this.runInitContainers(podIp))) return;
    for (const c of this.pod.spec?.containers ?? []) this.startContainer(c, podIp, this.containers, this.restartPolicy);
    this.writeStatus();
  }

  /**
   * The sandbox an earlier kubelet made for this pod, as kubelet finds its sandboxes through the runtime after a
   * restart: its IP, when the record names this pod and its network namespace is still there.
   */
  private async adoptSandbox(): Promise<string | undefined> {
    const record = await readSandboxRecord(this.dir);
    if (record?.uid !== this.pod.metadata?.uid || record?.ip === undefined) return undefined;
    if (!this.hostNetwork) {
      if (!existsSync(`/run/netns/${this.netns}`)) return undefined;
      this.netnsMade = true;
    }
    return record.ip;
  }

  /** The containers an earlier kubelet left running in this pod's sandbox at `podIp`, to be stopped. */
  private takeOverContainers(podIp: string): void {
    this.podIp = podIp;
    for (const c of this.pod.spec?.containers ?? []) {
      const p = this.newContainer(c, podIp, 'Never');
      if (p.takeOver()) this.containers.push(p);
    }
  }

  /** A ConfigMap or Secret changed: the volumes that read it are rewritten. */
  sourceChanged(kind: 'ConfigMap' | 'Secret', name: string): void {
    void this.volumes?.refresh(this.pod, { kind, name });
  }

  /**
   * Sets up the pod's volumes and its hosts and resolv.conf files, trying again with back-off while one fails
   * (each failure a FailedMount Event, as kubelet records it); false when the pod went away meanwhile.
   */
  private async mountVolumes(podIp: string): Promise<boolean> {
    const at = { podIp, hostIp: this.k.node.ip };
    const { namespace = '', name = '', uid = '' } = this.pod.metadata ?? {};
    const tokenFor = (r: TokenRequestFor): Promise<string> =>
      requestToken(this.k.kc, {
        namespace: r.namespace,
        serviceAccount: r.serviceAccount,
        audience: r.audience,
        ttlSeconds: r.expirationSeconds,
        pod: r.pod.name,
        podUid: r.pod.uid,
      });
    this.volumes = new PodVolumes(this.pod, path.join(this.runDir, 'volumes'), at, {
      sources: this.k.sources,
      requestToken: tokenFor,
      hostPath: this.k.hostPath,
      clock: this.k.clock ?? systemClock,
      log: this.log,
    });
    while (!this.terminating) {
      try {
        await this.volumes.setUp();
        await this.writeDnsFiles(podIp);
        if (this.mountError !== undefined) this.log.info('volumes mounted');
        this.mountError = undefined;
        return true;
      } catch (e) {
        const why = describeError(e);
        if (why !== this.mountError) {
          this.log.warn({ error: why }, 'FailedMount');
          await this.events
            .record(
              { apiVersion: 'v1', kind: 'Pod', metadata: { namespace, name, uid } },
              'Warning',
              'FailedMount',
              why,
            )
            .catch((err: unknown) => this.log.debug({ error: describeError(err) }, 'cannot record event'));
        }
        this.mountError = why;
        this.writeStatus();
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          this.retryTimer = setTimeout(resolve, this.mountRetry.next());
        });
      }
    }
    return false;
  }

  /** The pod's /etc/hosts, /etc/resolv.conf and /etc/hostname. */
  private async writeDnsFiles(podIp: string): Promise<void> {
    const etc = path.join(this.runDir, 'etc');
    await mkdir(etc, { recursive: true });
    const dns = this.k.sources.services.get(KUBE_DNS.name, KUBE_DNS.namespace)?.spec?.clusterIP;
    const clusterDns = dns === undefined || dns === '' || dns === 'None' ? undefined : dns;
    await writeFile(path.join(etc, 'resolv.conf'), podResolvConf(this.pod, this.k.nodeResolvConf, clusterDns), {
      mode: 0o644,
    });
    if (this.hostNetwork) return;
    await writeFile(path.join(etc, 'hosts'), podHostsFile(this.pod, podIp), { mode: 0o644 });
    await writeFile(path.join(etc, 'hostname'), `${podHostname(this.pod)}\n`, { mode: 0o644 });
  }

  /** The files the kubelet manages in every container's /etc. */
  private etcMounts(): ContainerMount[] {
    const etc = path.join(this.runDir, 'etc');
    const files = this.hostNetwork ? ['resolv.conf'] : ['hosts', 'resolv.conf', 'hostname'];
    return files.map((f) => ({ destination: `/etc/${f}`, source: path.join(etc, f), readOnly: false }));
  }

  /** Container `name`'s run record (`json`) or its shim's exit status (`exit`), beside its bundle. */
  private containerFile(name: string, ext: 'json' | 'exit'): string {
    return path.join(this.runDir, 'containers', `${name}.${ext}`);
  }

  /** The id the runtime knows container `name` of this pod by (the status's `containerID` is `amesh://<id>`). */
  private containerId(name: string): string {
    return `${this.pod.metadata?.uid ?? ''}-${name}`;
  }

  /** How runc starts container `c`: its env, argv, credentials and mounts are worked out at every start. */
  private launcher(c: V1Container, podIp: string): ContainerLauncher {
    const id = this.containerId(c.name);
    return {
      prepare: () => {
        const env = containerEnv(
          this.pod,
          c,
          { podIp, hostIp: this.k.node.ip },
          this.k.sources.services.list(),
          this.k.sources,
        );
        const argv = containerArgv(c, env);
        const local = localImageCommand(c.image, argv[0], this.k.imageLauncher);
        const cmd = local?.cmd ?? (argv[0] === undefined ? undefined : resolveCommand(argv[0], env['PATH'] ?? ''));
        if (cmd === undefined)
          throw new ContainerCreateError(
            'CreateContainerError',
            argv[0] === undefined
              ? `container ${c.name} has no command: amesh up runs a container's command and args, not its image`
              : `container ${c.name}: "${argv[0]}" is not an executable on its PATH`,
          );
        let cred;
        try {
          cred = containerCredentials(this.pod, c);
        } catch (e) {
          throw new ContainerCreateError('CreateContainerConfigError', (e as Error).message);
        }
        return this.k.runtime.prepare({
          id,
          exitFile: this.containerFile(c.name, 'exit'),
          dir: path.join(this.runDir, 'containers', c.name),
          process: {
            args: [cmd, ...argv.slice(1)],
            env: Object.entries(env).map(([key, value]) => `${key}=${value}`),
            cwd: c.workingDir ?? '/',
            user: { uid: cred.uid, gid: cred.gid, additionalGids: cred.additionalGids },
            capabilities: cred.capabilities,
            noNewPrivileges: cred.noNewPrivileges,
          },
          hostname: this.hostNetwork ? undefined : podHostname(this.pod),
          netnsPath: `/run/netns/${this.netns}`,
          mounts: [...this.etcMounts(), ...this.volumes!.mounts(c), ...(local?.mounts ?? [])],
          readOnlyRootFilesystem: cred.readOnlyRootFilesystem,
        });
      },
      signal: (sig) => this.k.runtime.kill(id, sig),
    };
  }

  /** Makes the sandbox's namespace and runs the CNI chain's ADD for it; returns the pod's IP. */
  private async addNetwork(): Promise<string> {
    await this.k.journal.create({ t: 'netns', name: this.netns }, () => ip('netns', 'add', this.netns));
    this.netnsMade = true;
    await ip('-n', this.netns, 'link', 'set', 'lo', 'up');
    await applyPodSysctls(this.netns, podSysctls(this.pod));
    const network = await loadNetworkConfig(this.k.cniConfDir, this.k.hostPath);
    this.network = network;
    const result = (await this.k.cni.add(network, this.at)) as { ips?: { address?: string }[] };
    const address = result.ips?.[0]?.address?.split('/')[0];
    if (address === undefined) throw new Error(`the CNI chain ${network.name} returned no IP`);
    return address;
  }

  private get restartPolicy(): RestartPolicy {
    return (this.pod.spec?.restartPolicy ?? 'Always') as RestartPolicy;
  }

  /** The pod as kubelet's messages name it (k8s.io/kubernetes/pkg/kubelet/util/format.Pod). */
  private get podName(): string {
    const { namespace = '', name = '', uid = '' } = this.pod.metadata ?? {};
    return `${name}_${namespace}(${uid})`;
  }

  /** Records an Event about this pod, as kubelet's recorder does for its containers. */
  private event(type: 'Normal' | 'Warning', reason: string, message: string): void {
    const { namespace = '', name = '', uid = '' } = this.pod.metadata ?? {};
    void this.events
      .record({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace, name, uid } }, type, reason, message)
      .catch((err: unknown) => this.log.debug({ error: describeError(err) }, 'cannot record event'));
  }

  private startContainer(c: V1Container, podIp: string, into: PodContainer[], policy: RestartPolicy): PodContainer {
    const p = this.newContainer(c, podIp, policy);
    p.on('change', () => this.writeStatus());
    into.push(p);
    p.start();
    return p;
  }

  private newContainer(c: V1Container, podIp: string, policy: RestartPolicy): PodContainer {
    const log = this.log.child({ container: c.name });
    return new PodContainer(c, {
      logFile: path.join(this.dir, `${c.name}.log`),
      stateFile: this.containerFile(c.name, 'json'),
      exitFile: this.containerFile(c.name, 'exit'),
      restartPolicy: policy,
      launcher: this.launcher(c, podIp),
      containerId: this.containerId(c.name),
      target: {
        podIp,
        execArgv: (cmd) => ['runc', ...this.k.runtime.execArgv(this.containerId(c.name), cmd)],
        nodeNetnsPath: this.k.nodeNetnsPath,
        ports: c.ports ?? [],
      },
      graceSeconds: () => this.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS,
      podName: this.podName,
      clock: this.k.clock ?? systemClock,
      log,
      event: (type, reason, message) => this.event(type, reason, message),
    });
  }

  /**
   * Runs the init containers one at a time, each to completion, as kuberuntime_manager.go computePodActions does:
   * a failed one is restarted with back-off, or under restartPolicy Never fails the pod. True once all completed.
   */
  private async runInitContainers(podIp: string): Promise<boolean> {
    const never = this.restartPolicy === 'Never';
    for (const c of this.pod.spec?.initContainers ?? []) {
      const p = this.startContainer(c, podIp, this.initContainers, never ? 'Never' : 'OnFailure');
      this.writeStatus();
      const outcome = await new Promise<'done' | 'failed' | 'stopped'>((resolve) => {
        const check = (): void => {
          const s = p.state;
          if (this.terminating) resolve('stopped');
          else if (s.t === 'terminated' && s.exitCode === 0) resolve('done');
          else if (s.t === 'terminated' && never) resolve('failed');
          else return;
          p.off('change', check);
          this.wakeInit = undefined;
        };
        this.wakeInit = check;
        p.on('change', check);
      });
      if (outcome === 'stopped') return false;
      if (outcome === 'failed') {
        this.log.warn({ container: c.name }, 'init container failed; restartPolicy Never fails the pod');
        this.initFailed = true;
        this.writeStatus();
        return false;
      }
    }
    this.initializedAt = Date.now();
    return !this.terminating;
  }

  private phase(): string {
    if (this.initFailed) return 'Failed';
    if (this.podIp === undefined || this.containers.length === 0) return 'Pending';
    const states = this.containers.map((p) => p.state);
    if (states.some((s) => s.t === 'running')) return 'Running';
    const policy = this.restartPolicy;
    if (states.every((s) => s.t === 'terminated')) {
      const failed = states.some((s) => s.t === 'terminated' && s.exitCode !== 0);
      if (policy === 'Never' || (policy === 'OnFailure' && !failed)) return failed ? 'Failed' : 'Succeeded';
    }
    // Restarting, or waiting in back-off: kubelet keeps such a pod Running once a container has run.
    return this.containers.some((p) => p.process.restartCount > 0 || p.process.lastTerminated !== undefined)
      ? 'Running'
      : 'Pending';
  }

  /**
   * The statuses of `specs`, those not started yet waiting in ContainerCreating, or PodInitializing in a pod with
   * init containers (kubelet_pods.go convertToAPIContainerStatuses).
   */
  private containerStatuses(specs: readonly V1Container[], running: readonly PodContainer[], isInit: boolean) {
    const waiting = (this.pod.spec?.initContainers ?? []).length > 0 ? 'PodInitializing' : 'ContainerCreating';
    return specs.map(
      (c) =>
        running.find((p) => p.name === c.name)?.status(c.image ?? '', isInit) ?? {
          name: c.name,
          image: c.image ?? '',
          imageID: '',
          ready: false,
          started: false,
          restartCount: 0,
          state: { waiting: { reason: waiting } },
        },
    );
  }

  private status(): V1PodStatus {
    const initSpecs = this.pod.spec?.initContainers ?? [];
    const initStatuses = this.containerStatuses(initSpecs, this.initContainers, true);
    const containerStatuses = this.containerStatuses(this.pod.spec?.containers ?? [], this.containers, false);
    const ready = this.containers.length > 0 && containerStatuses.every((s) => s.ready);
    if (ready !== this.lastReady) {
      this.lastReady = ready;
      this.readyChanged = Date.now();
    }
    const notReady = containerStatuses.filter((s) => !s.ready).map((s) => s.name);
    const why = notReady.length === 0 ? undefined : `containers with unready status: [${notReady.join(' ')}]`;
    const incomplete = initStatuses.filter((s) => !s.ready).map((s) => s.name);
    const initialized = incomplete.length === 0;
    const sandbox = this.podIp !== undefined;
    return {
      phase: this.phase(),
      hostIP: this.k.node.ip,
      hostIPs: [{ ip: this.k.node.ip }],
      ...(sandbox ? { podIP: this.podIp, podIPs: [{ ip: this.podIp! }] } : {}),
      startTime: kubeTime(this.created) as unknown as Date,
      conditions: [
        condition(
          'PodReadyToStartContainers',
          sandbox,
          this.created,
          sandbox ? undefined : 'FailedCreatePodSandBox',
          this.sandboxError,
        ),
        condition(
          'Initialized',
          initialized,
          this.initializedAt ?? this.created,
          initialized ? undefined : 'ContainersNotInitialized',
          initialized ? undefined : `containers with incomplete status: [${incomplete.join(' ')}]`,
        ),
        condition('Ready', ready, this.readyChanged, ready ? undefined : 'ContainersNotReady', why),
        condition('ContainersReady', ready, this.readyChanged, ready ? undefined : 'ContainersNotReady', why),
        condition('PodScheduled', true, this.created),
      ],
      ...(initSpecs.length > 0 ? { initContainerStatuses: initStatuses } : {}),
      containerStatuses,
    };
  }

  /** Writes the current status, coalescing changes that arrive while a write is in flight. */
  private writeStatus(): void {
    if (this.terminating) return;
    this.statusDirty = true;
    if (this.statusWriting) return;
    this.statusWriting = true;
    this.statusIdle = (async () => {
      while (this.statusDirty && !this.terminating) {
        this.statusDirty = false;
        const { namespace = '', name = '' } = this.pod.metadata ?? {};
        try {
          await this.core.patchNamespacedPodStatus({ name, namespace, body: { status: this.status() } }, MERGE_PATCH);
          this.statusRetry.reset();
          this.statusFailing = false;
        } catch (e) {
          const code = (e as { code?: number }).code;
          if (code === 404) continue;
          // The API is away (restarting): the status is written again when it is back, as kubelet's status
          // manager keeps resending what the API does not have.
          if (!this.statusFailing) this.log.warn({ error: describeError(e) }, 'cannot write pod status');
          this.statusFailing = true;
          clearTimeout(this.statusTimer);
          this.statusTimer = setTimeout(() => this.writeStatus(), this.statusRetry.next());
        }
      }
      this.statusWriting = false;
    })();
  }

  /**
   * The status of a deleted pod whose containers have all stopped: a terminal phase, Succeeded only if every
   * container exited 0 (kubelet_pods.go `getPhase` for a terminal pod), and no container ready.
   */
  private async writeFinalStatus(): Promise<void> {
    const status = this.status();
    const clean = this.containers.every((p) => p.state.t === 'terminated' && p.state.exitCode === 0);
    status.phase = this.containers.length > 0 && clean ? 'Succeeded' : 'Failed';
    const { namespace = '', name = '' } = this.pod.metadata ?? {};
    await this.core
      .patchNamespacedPodStatus({ name, namespace, body: { status } }, MERGE_PATCH)
      .catch((e: unknown) => this.log.warn({ error: describeError(e) }, 'cannot write final pod status'));
  }

  private async removeSandbox(): Promise<void> {
    this.podIp = undefined;
    if (!this.netnsMade) return;
    this.netnsMade = false;
    try {
      await this.k.cni.del(this.network ?? (await loadNetworkConfig(this.k.cniConfDir, this.k.hostPath)), this.at);
    } catch (e) {
      this.log.warn({ error: describeError(e) }, 'CNI DEL failed');
    }
    this.network = undefined;
    await deleteNetns(this.netns).catch((e: unknown) =>
      this.log.debug({ error: describeError(e) }, 'no sandbox namespace to remove'),
    );
  }

  /**
   * Stops the containers (preStop hook, SIGTERM, then SIGKILL once the grace period is over), runs CNI DEL and removes the sandbox, and
   * with it the pod's logs unless `keepLogs`.
   */
  async terminate(graceSeconds?: number, keepLogs = false, finalStatus = false): Promise<void> {
    this.terminating = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.statusTimer);
    this.wake?.();
    this.wakeInit?.();
    await this.started;
    this.volumes?.stop();
    const grace = (graceSeconds ?? this.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS) * 1000;
    await Promise.all([...this.initContainers, ...this.containers].map((c) => c.stop(grace)));
    await this.statusIdle;
    if (finalStatus) await this.writeFinalStatus();
    await this.removeSandbox();
    await rm(this.runDir, { recursive: true, force: true });
    if (!keepLogs) await rm(this.dir, { recursive: true, force: true });
    this.log.info('pod removed');
  }
}

export class Kubelet {
  private readonly core: CoreV1Api;
  private readonly pods: RestartingInformer<V1Pod>;
  private readonly workers = new Map<string, PodWorker>();
  private readonly terminations = new Set<Promise<void>>();
  /** Pods marked for deletion whose termination is under way, by uid. */
  private readonly finishing = new Set<string>();
  private readonly lease: NodeLease;
  private readonly events: EventRecorder;
  private readonly unsubscribe: () => void;
  /** The static pods (static-pod-source.ts), by `namespace/name`: run from the start, mirrored once the API answers. */
  private readonly staticPods = new Map<string, { readonly pod: V1Pod; readonly worker: PodWorker }>();
  private readonly mirrors: MirrorClient;
  private nodeUid: string | undefined;
  private stopped = false;
  private readonly sandboxes = pLimit(SANDBOX_CONCURRENCY);
  readonly synced: Promise<void>;

  constructor(private readonly k: KubeletOptions) {
    this.core = k.kc.makeApiClient(CoreV1Api);
    this.events = new EventRecorder(k.kc, 'kubelet', k.node.name);
    this.mirrors = new MirrorClient(k.kc, { name: k.node.name, uid: () => this.nodeUid });
    this.unsubscribe = k.sources.onChange((kind, namespace, name) => {
      for (const w of this.workers.values()) if (w.namespace === namespace) w.sourceChanged(kind, name);
    });
    this.lease = new NodeLease(k.kc, k.node.name, k.log, { onRenew: () => this.stillReady() });
    const selector = `spec.nodeName=${k.node.name}`;
    const onPod = (p: V1Pod): void => this.sync(p);
    this.pods = new RestartingInformer<V1Pod>(
      k.kc,
      '/api/v1/pods',
      () => listJson(k.kc, `/api/v1/pods?fieldSelector=${encodeURIComponent(selector)}`),
      { add: onPod, update: onPod, delete: (p) => this.remove(p) },
      k.log,
      selector,
    );
    this.synced = this.pods.synced;
  }

  /** Registers the Node (or takes over one the manifests define), with its pod CIDR, address and Ready condition. */
  async register(): Promise<void> {
    const { name, podCidr } = this.k.node;
    const meta = {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': process.arch === 'x64' ? 'amd64' : process.arch,
      },
    };
    const spec = { podCIDR: podCidr, podCIDRs: [podCidr] };
    try {
      this.nodeUid = (await this.core.createNode({ body: { metadata: meta, spec } })).metadata?.uid;
    } catch (e) {
      if ((e as { code?: number }).code !== 409) throw e;
      const node = await this.core.patchNode({ name, body: { metadata: { labels: meta.labels }, spec } }, MERGE_PATCH);
      this.nodeUid = node.metadata?.uid;
    }
    await this.postStatus();
  }

  /**
   * Starts the static pods of `staticPodPath`, which need no API server (kubeadm's control plane is such pods); a
   * manifest that is not a pod is skipped with an error logged, as kubelet does.
   */
  async startStaticPods(): Promise<void> {
    if (this.k.staticPodPath === undefined) return;
    const { pods, errors } = await readStaticPods(this.k.staticPodPath, this.k.node.name);
    for (const error of errors) this.k.log.error({ error }, 'static pod manifest skipped');
    for (const pod of pods)
      this.staticPods.set(fullName(pod), {
        pod,
        worker: new PodWorker(pod, this.k, this.core, this.events, this.sandboxes),
      });
  }

  /**
   * A mirror pod as the API has it: one of another static pod (an older manifest), or marked for deletion, is
   * deleted at once, and one of a static pod that still runs is made again, as kubelet's pod workers keep mirrors;
   * otherwise its status is brought in line with the static pod's.
   */
  private syncMirror(mirror: V1Pod): void {
    const own = this.staticPods.get(fullName(mirror));
    const current =
      own !== undefined &&
      mirrorHash(mirror) === own.pod.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] &&
      mirror.metadata?.deletionTimestamp === undefined;
    if (current) {
      own.worker.reconcileStatus(mirror);
      return;
    }
    void this.mirrors
      .delete(mirror)
      .then(() => (own === undefined || this.stopped ? undefined : this.mirrors.create(own.pod)))
      .catch((e: unknown) =>
        this.k.log.warn({ pod: fullName(mirror), error: describeError(e) }, 'cannot replace mirror pod'),
      );
  }

  /** Creates the mirror of each static pod the API does not have (after the first list of this node's pods). */
  private async createMirrors(): Promise<void> {
    for (const [key, { pod }] of this.staticPods) {
      if (this.stopped || this.pods.list().some((p) => isMirrorPod(p) && fullName(p) === key)) continue;
      await this.mirrors
        .create(pod)
        .catch((e: unknown) => this.k.log.warn({ pod: key, error: describeError(e) }, 'cannot create mirror pod'));
    }
  }

  /** The node's addresses, software and Ready condition, as the kubelet's status loop posts them. */
  private async postStatus(): Promise<void> {
    const { name, ip: address } = this.k.node;
    const now = kubeTime();
    const status = {
      addresses: [
        { type: 'InternalIP', address },
        { type: 'Hostname', address: name },
      ],
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'kubelet is posting ready status',
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
      ],
      nodeInfo: {
        kubeletVersion: KUBELET_VERSION,
        kubeProxyVersion: '',
        containerRuntimeVersion: `amesh://${VERSION}`,
        kernelVersion: os.release(),
        osImage: os.version(),
        operatingSystem: 'linux',
        architecture: process.arch === 'x64' ? 'amd64' : process.arch,
        machineID: '',
        systemUUID: '',
        bootID: '',
      },
    };
    await this.core.patchNodeStatus({ name, body: { status } }, MERGE_PATCH);
  }

  /** Watches this node's pods and starts the heartbeat. */
  start(): void {
    this.pods.start();
    this.lease.start();
    void this.pods.synced.then(async () => {
      await this.createMirrors();
      await this.removeOrphans();
    });
  }

  /**
   * Stops and removes the pods of this node that an earlier kubelet ran and the API no longer has (deleted while no
   * kubelet ran), as kubelet's housekeeping removes the runtime's orphaned pods.
   */
  private async removeOrphans(): Promise<void> {
    const known = new Set([
      ...this.pods.list().map((p) => p.metadata?.uid),
      ...[...this.staticPods.values()].map((s) => s.pod.metadata?.uid),
    ]);
    for (const dir of await readdir(this.k.dataDir.podsDir).catch(() => [])) {
      const r = await readSandboxRecord(path.join(this.k.dataDir.podsDir, dir)).catch(() => undefined);
      if (r === undefined || r.node !== this.k.node.name || known.has(r.uid) || this.finishing.has(r.uid)) continue;
      if (!existsSync(this.k.dataDir.podRuntimeDir(r.uid))) continue;
      const pod: V1Pod = {
        metadata: { namespace: r.namespace, name: r.name, uid: r.uid },
        spec: { hostNetwork: r.netns === this.k.node.netns, containers: r.containers.map((name) => ({ name })) },
      };
      this.k.log.info({ pod: `${r.namespace}/${r.name}` }, 'removing a pod the API no longer has');
      this.track(new PodWorker(pod, this.k, this.core, this.events, this.sandboxes, true).terminate(0));
    }
  }

  /** After a heartbeat: posts Ready again if the API has the node otherwise (marked Unknown while it was away). */
  private async stillReady(): Promise<void> {
    const node = await this.core.readNode({ name: this.k.node.name });
    if (node.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True') return;
    await this.postStatus();
    this.k.log.info({ node: this.k.node.name }, 'node Ready again');
  }

  private sync(p: V1Pod): void {
    if (isMirrorPod(p)) {
      this.syncMirror(p);
      return;
    }
    const uid = p.metadata?.uid ?? '';
    if (this.finishing.has(uid)) return;
    if (p.metadata?.deletionTimestamp !== undefined) {
      this.finish(p);
      return;
    }
    const w = this.workers.get(uid);
    if (w !== undefined) w.update(p);
    else this.workers.set(uid, new PodWorker(p, this.k, this.core, this.events, this.sandboxes));
  }

  /**
   * A pod marked for deletion: its containers get what is left of `deletionGracePeriodSeconds` to stop, its final
   * status is written and its sandbox removed, and then the kubelet deletes it for good, with grace 0 and its uid as
   * precondition (status_manager.go `canBeDeleted`/`syncPod`), so that a new pod of the same name is left alone.
   */
  private finish(p: V1Pod): void {
    const { uid = '', name = '', namespace = '' } = p.metadata ?? {};
    this.finishing.add(uid);
    // A pod marked for deletion while no kubelet ran: what the one before left of it is taken over to be stopped.
    const w = this.workers.get(uid) ?? new PodWorker(p, this.k, this.core, this.events, this.sandboxes, true);
    this.workers.delete(uid);
    const deadline = Date.parse(String(p.metadata?.deletionTimestamp));
    const graceSeconds = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
    this.track(
      (async () => {
        await w?.terminate(graceSeconds, false, true);
        await this.core
          .deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0, body: { preconditions: { uid } } })
          .catch((e: unknown) => {
            if ((e as { code?: number }).code !== 404) throw e;
          });
      })().finally(() => this.finishing.delete(uid)),
    );
  }

  private remove(p: V1Pod): void {
    const own = isMirrorPod(p) ? this.staticPods.get(fullName(p)) : undefined;
    if (own !== undefined && !this.stopped)
      void this.mirrors
        .create(own.pod)
        .catch((e: unknown) =>
          this.k.log.warn({ pod: fullName(p), error: describeError(e) }, 'cannot create mirror pod'),
        );
    const uid = p.metadata?.uid ?? '';
    const w = this.workers.get(uid);
    if (w === undefined) return;
    this.workers.delete(uid);
    this.track(w.terminate());
  }

  private track(work: Promise<void>): void {
    const done = work.catch((e: unknown) => this.k.log.error({ error: describeError(e) }, 'cannot remove pod'));
    this.terminations.add(done);
    void done.then(() => this.terminations.delete(done));
  }

  /**
   * Stops watching and removes every pod's processes and sandbox (the cluster is going away: no grace), keeping
   * their logs.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe();
    await this.lease.stop();
    await this.pods.stop();
    const all = [...this.workers.values()].map((w) => w.terminate(0, true));
    this.workers.clear();
    await Promise.all([...all, ...this.terminations]);
  }

  /** Stops the static pods (the cluster is going away: no grace), keeping their logs. */
  async stopStaticPods(): Promise<void> {
    const all = [...this.staticPods.values()].map((s) => s.worker.terminate(0, true));
    this.staticPods.clear();
    await Promise.all(all);
  }
}

const fullName = (p: V1Pod): string => `${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`;
