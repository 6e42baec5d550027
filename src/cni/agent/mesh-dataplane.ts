/**
 * Adding a pod to the mesh and removing it, in Istio's order (istio cni/pkg/nodeagent/meshdataplane_linux.go,
 * net_linux.go). Add: open the pod's netns (the CNI netns path, else the cached fd, else a /proc scan), apply the
 * in-pod rules, hand the pod to ztunnel over ZDS and wait for its ack, put its IPs in the host probe ipset, then
 * annotate it `enabled`. A netns or rules failure is not retried (the pod is left as it was); a ztunnel failure
 * annotates it `pending` (its rules are in, so removal must undo them) and is retried by the caller. Remove: the
 * ipset entries first, the rules unless the pod is gone, ZDS Del to every ztunnel, then the annotation. The pods
 * enrolled here, with their netns fds, are the snapshot every connecting ztunnel gets. Operations on one pod run
 * one at a time, so the CNI plugin's ADD and an informer event for the same pod never interleave.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { MeshError, describeError, isMeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { WorkloadInfo } from '../../zds/workload-info.js';
import { podIps, podPartiallyEnrolled, workloadInfo } from './pod-enrollment.js';
import { podTrafficOverrides, type PodTrafficOverrides } from './pod-rules.js';
import { ZTUNNEL_ADD_FAILED_REASON, type PodMarker } from './pod-marker.js';
import type { SnapshotPod, ZtunnelLink } from './ztunnel-link.js';

/** Istio's in-pod rules (iptables mangle/nat/raw chains, `ip rule` and the table-100 route) inside a pod's netns. */
export interface InpodRules {
  /** Applies the rules, replacing whatever amesh or Istio left there before. */
  apply(netns: number, overrides: PodTrafficOverrides): Promise<void>;
  remove(netns: number): Promise<void>;
}

/** The node's rules for kubelet probes: the `ISTIO_POSTRT` SNAT chain and the ipset of enrolled pod IPs. */
export interface HostProbes {
  /** Creates the chain and the ipsets, keeping the entries already there. */
  create(): Promise<void>;
  /** Removes the chain and destroys the ipsets. */
  delete(): Promise<void>;
  /** Upserts the pod's IPs (commented with its UID). */
  addPod(uid: string, ips: readonly string[]): Promise<void>;
  /** Removes the entries that carry the pod's UID. */
  removePod(uid: string): Promise<unknown>;
  /** Removes every entry whose UID is not one of `enrolledUids`. */
  prune(enrolledUids: ReadonlySet<string>): Promise<unknown>;
}

/** Open fds on pods' network namespaces, by pod UID; the cache owns and closes them. */
export interface PodNetnsCache {
  /** Opens (or keeps, when it is the same netns) the netns at a CNI netns path for the pod. */
  open(uid: string, netnsPath: string): number;
  get(uid: string): number | undefined;
  /** Closes and forgets the pod's fd. */
  remove(uid: string): boolean;
  closeAll(): void;
  /** For pods already running: finds and caches their netns by scanning /proc for one holding their IPs. */
  scanProc(pods: Iterable<{ readonly uid: string; readonly ips: readonly string[] }>): Promise<Map<string, number>>;
}

/** What the agent's enrollment calls; MeshDataplane implements it. */
export interface PodDataplane {
  addPodToMesh(pod: V1Pod, ips: readonly string[], netnsPath: string): Promise<void>;
  removePodFromMesh(pod: V1Pod, isDelete: boolean): Promise<void>;
  syncHostProbeIps(pod: V1Pod, ips: readonly string[]): Promise<void>;
}

/** Failures Istio does not retry (ErrNonRetryableAdd): the pod's netns, its rules, or an annotation its rules cannot take. */
export const isNonRetryableAdd = (e: unknown): boolean =>
  isMeshError(e, 'AGENT_ERR_POD_NETNS') ||
  isMeshError(e, 'AGENT_ERR_POD_RULES') ||
  isMeshError(e, 'AGENT_ERR_POD_ANNOTATION');

export class MeshDataplane implements PodDataplane {
  /** With the netns cache, Istio's podNetnsCache: every pod being or already enrolled, by UID. */
  private readonly pods = new Map<string, WorkloadInfo>();
  private readonly busy = new Map<string, Promise<void>>();
  private link: ZtunnelLink | undefined;

  constructor(
    private readonly rules: InpodRules,
    private readonly hostProbes: HostProbes,
    private readonly netns: PodNetnsCache,
    private readonly marker: PodMarker,
    private readonly log: Logger,
  ) {}

  /** The ZDS snapshot: Add (with the netns) for each pod whose netns is open, Keep for the others. */
  snapshot(): SnapshotPod[] {
    return [...this.pods].map(([uid, info]) => ({ uid, info, netns: this.netns.get(uid) }));
  }

  /** The ZDS server, once it exists (it takes this dataplane's snapshot, so it is built after it). */
  attach(link: ZtunnelLink): void {
    this.link = link;
  }

  /**
   * Before ztunnel connects: the probe ipset holds the snapshot pods' IPs and no other pod's, each pod's netns is
   * found under /proc, and with `reconcileRules` their rules are brought up to date. Errors are logged per pod;
   * the agent starts anyway, as Istio's does.
   */
  async constructInitialSnapshot(pods: readonly V1Pod[], reconcileRules: boolean): Promise<void> {
    for (const pod of pods) {
      const ips = podIps(pod);
      if (ips.length === 0) continue;
      await this.hostProbes.addPod(uidOf(pod), ips).catch((e: unknown) => {
        this.log.error(
          { pod: nameOf(pod), error: describeError(e) },
          'cannot add an enrolled pod to the host probe ipset; its kubelet probes will fail',
        );
      });
    }
    await this.probes(() => this.hostProbes.prune(new Set(pods.map(uidOf))), 'prune');
    for (const pod of pods) this.pods.set(uidOf(pod), workloadInfo(pod));
    await this.netns.scanProc(pods.map((p) => ({ uid: uidOf(p), ips: podIps(p) }))).catch((e: unknown) => {
      // The pods found unambiguously are cached; the others go to ztunnel as Keep, as a pod with no process does.
      this.log.error(
        { error: describeError(e) },
        'some enrolled pods have no single network namespace holding their IPs; they are not re-sent to ztunnel',
      );
    });
    if (!reconcileRules) return;
    for (const pod of pods) {
      const fd = this.netns.get(uidOf(pod));
      if (fd === undefined) {
        this.log.warn(
          { pod: nameOf(pod) },
          'enrolled pod has no running process with its IP; ztunnel keeps its proxy (Keep) until it is deleted',
        );
        continue;
      }
      await this.applyRules(pod, fd).catch((e: unknown) => {
        this.log.error(
          { pod: nameOf(pod), error: describeError(e) },
          'cannot reconcile the in-pod rules of an enrolled pod; restart the pod, or remove it from the mesh and add it again',
        );
      });
    }
  }

  addPodToMesh(pod: V1Pod, ips: readonly string[], netnsPath: string): Promise<void> {
    return this.exclusive(uidOf(pod), () => this.add(pod, ips, netnsPath));
  }

  removePodFromMesh(pod: V1Pod, isDelete: boolean): Promise<void> {
    return this.exclusive(uidOf(pod), () => this.remove(pod, isDelete));
  }

  async syncHostProbeIps(pod: V1Pod, ips: readonly string[]): Promise<void> {
    await this.probes(() => this.hostProbes.addPod(uidOf(pod), ips), `add pod ${nameOf(pod)} to`);
  }

  /** Lets go of every netns; with `cleanup` (not an upgrade) also removes the host probe rules. Pod rules stay. */
  async stop(cleanup: boolean): Promise<void> {
    await Promise.allSettled(this.busy.values());
    this.netns.closeAll();
    this.pods.clear();
    if (cleanup) await this.probes(() => this.hostProbes.delete(), 'remove');
  }

  private async add(pod: V1Pod, ips: readonly string[], netnsPath: string): Promise<void> {
    const uid = uidOf(pod);
    const log = this.log.child({ pod: nameOf(pod) });
    log.info('adding pod to the mesh');
    const info = workloadInfo(pod);
    this.pods.set(uid, info);
    let fd: number;
    try {
      fd = await this.openNetns(pod, netnsPath);
      await this.applyRules(pod, fd);
    } catch (e) {
      this.forget(uid);
      throw e;
    }
    try {
      await this.ztunnel().addWorkload(uid, info, fd);
    } catch (e) {
      const err = new MeshError('AGENT_ERR_ZTUNNEL', `ztunnel did not take pod ${nameOf(pod)}: ${describeError(e)}`, {
        cause: e,
      });
      log.error(
        { error: describeError(err) },
        'pod partially added (rules in place); annotating it pending and retrying',
      );
      if (!podPartiallyEnrolled(pod)) {
        await this.marker
          .warn(pod, ZTUNNEL_ADD_FAILED_REASON, err.message)
          .catch((w: unknown) => log.warn({ error: describeError(w) }, 'cannot record the Event'));
      }
      await this.marker.pending(pod);
      throw err;
    }
    await this.syncHostProbeIps(pod, ips);
    await this.marker.enrolled(pod);
    log.info('pod added to the mesh');
  }

  private async remove(pod: V1Pod, isDelete: boolean): Promise<void> {
    const uid = uidOf(pod);
    const log = this.log.child({ pod: nameOf(pod), deleted: isDelete });
    log.info('removing pod from the mesh');
    await this.probes(() => this.hostProbes.removePod(uid), `remove pod ${nameOf(pod)} from`);
    const fd = this.netns.get(uid);
    if (!isDelete) {
      if (fd === undefined) {
        log.warn('pod netns not found; its in-pod rules cannot be removed');
      } else {
        await this.rules.remove(fd);
      }
    }
    this.forget(uid);
    try {
      await this.ztunnel().delWorkload(uid);
    } catch (e) {
      throw new MeshError('AGENT_ERR_ZTUNNEL', `cannot remove pod ${nameOf(pod)} from ztunnel: ${describeError(e)}`, {
        cause: e,
      });
    }
    try {
      await this.marker.unenrolled(pod);
    } catch (e) {
      // A pod on its way out keeps the annotation with it; a running one must lose it, so that is retried.
      if (!isDelete) throw e;
    }
    log.info('pod removed from the mesh');
  }

  private ztunnel(): ZtunnelLink {
    if (this.link === undefined)
      throw new MeshError('AGENT_ERR_ZTUNNEL', 'no ztunnel connection (the ZDS server is not running)');
    return this.link;
  }

  private async openNetns(pod: V1Pod, netnsPath: string): Promise<number> {
    const uid = uidOf(pod);
    if (netnsPath !== '') return this.netns.open(uid, netnsPath);
    const fd = this.netns.get(uid) ?? (await this.netns.scanProc([{ uid, ips: podIps(pod) }])).get(uid);
    if (fd === undefined)
      throw new MeshError(
        'AGENT_ERR_POD_NETNS',
        `pod ${nameOf(pod)}: no process under /proc has a network namespace with its IP ${podIps(pod).join(', ')} (a pod still starting is captured through the CNI plugin)`,
      );
    return fd;
  }

  /** Applies the pod's rules with its annotations' overrides (a bad interface name fails; a bad boolean is logged). */
  private async applyRules(pod: V1Pod, fd: number): Promise<void> {
    const overrides = podTrafficOverrides(pod.metadata?.annotations);
    for (const w of overrides.warnings) this.log.warn({ pod: nameOf(pod) }, w);
    await this.rules.apply(fd, overrides);
  }

  private forget(uid: string): void {
    this.netns.remove(uid);
    this.pods.delete(uid);
  }

  private async probes(op: () => Promise<unknown>, what: string): Promise<void> {
    try {
      await op();
    } catch (e) {
      if (isMeshError(e)) throw e;
      throw new MeshError('AGENT_ERR_HOST_RULES', `cannot ${what} the host probe rules: ${describeError(e)}`, {
        cause: e,
      });
    }
  }

  private exclusive(uid: string, op: () => Promise<void>): Promise<void> {
    const run = (this.busy.get(uid) ?? Promise.resolve()).then(op);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.busy.set(uid, settled);
    void settled.then(() => {
      if (this.busy.get(uid) === settled) this.busy.delete(uid);
    });
    return run;
  }
}

const uidOf = (pod: V1Pod): string => pod.metadata?.uid ?? '';
const nameOf = (pod: V1Pod): string => `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
