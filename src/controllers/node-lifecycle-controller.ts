/**
 * The node lifecycle controller (k8s.io/kubernetes `pkg/controller/nodelifecycle`): every `monitorPeriodMs` (5 s,
 * `--node-monitor-period`) it looks at each node's heartbeats, its Lease's `renewTime` and its Ready condition's
 * `lastHeartbeatTime`, and notes on its own clock when either last changed (so the kubelet's clock does not
 * matter). A node without a new heartbeat for `gracePeriodMs` (40 s, `--node-monitor-grace-period`) has its
 * kubelet's conditions set Unknown (`NodeStatusUnknown`, "Kubelet stopped posting node status.") and its pods
 * marked not Ready (`MarkPodsNotReady`), so their endpoints and the mesh stop sending them traffic.
 *
 * Nodes are tainted by their Ready condition, as `TaintNodesByCondition` and the NoExecute taints do:
 * `node.kubernetes.io/not-ready` when False, `node.kubernetes.io/unreachable` when Unknown, NoSchedule and
 * NoExecute, and neither when True. Pods are not evicted for the NoExecute taint: the taint eviction controller
 * (tolerationSeconds) is not run.
 */
import {
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1Lease,
  type V1Node,
  type V1Pod,
  type V1Taint,
} from '@kubernetes/client-node';
import type { RestartingInformer } from '../kube/informer.js';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import { describeError } from '../lib/errors.js';
import { kubeTime } from '../lib/kube-time.js';
import type { Logger } from '../lib/log.js';
import { NOT_READY_TAINT } from './node-predicates.js';
import { isPodReady } from './owned-objects.js';

export const UNREACHABLE_TAINT = 'node.kubernetes.io/unreachable';
const NODE_LEASE_NAMESPACE = 'kube-node-lease';
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const STRATEGIC_MERGE = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
/** The conditions a kubelet posts, which go Unknown with it. */
const KUBELET_CONDITIONS = ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure'];
/** The taint keys this controller owns, by the Ready condition's status. */
const TAINT_BY_READY: Readonly<Record<string, string | undefined>> = {
  False: NOT_READY_TAINT,
  Unknown: UNREACHABLE_TAINT,
};

export interface NodeLifecycleOptions {
  readonly monitorPeriodMs?: number;
  readonly gracePeriodMs?: number;
  readonly now?: () => number;
}

/** The last heartbeats seen of one node, and when (on this controller's clock) they last changed. */
interface Observed {
  readonly heartbeat: string;
  readonly at: number;
}

export class NodeLifecycleController {
  private readonly nodes: RestartingInformer<V1Node>;
  private readonly leases: RestartingInformer<V1Lease>;
  private readonly pods: RestartingInformer<V1Pod>;
  private readonly core: CoreV1Api;
  private readonly observed = new Map<string, Observed>();
  private readonly monitorPeriodMs: number;
  private readonly gracePeriodMs: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private monitoring: Promise<void> = Promise.resolve();
  readonly synced: Promise<void>;

  constructor(
    kc: KubeConfig,
    informers: SharedInformerFactory,
    private readonly log: Logger,
    opts: NodeLifecycleOptions = {},
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.monitorPeriodMs = opts.monitorPeriodMs ?? 5_000;
    this.gracePeriodMs = opts.gracePeriodMs ?? 40_000;
    this.now = opts.now ?? Date.now;
    this.nodes = informers.informerFor<V1Node>('/api/v1/nodes');
    this.leases = informers.informerFor<V1Lease>('/apis/coordination.k8s.io/v1/leases');
    this.pods = informers.informerFor<V1Pod>('/api/v1/pods');
    this.synced = Promise.all([this.nodes.synced, this.leases.synced, this.pods.synced]).then(() => undefined);
  }

  start(): void {
    void this.synced.then(() => {
      if (!this.stopped) this.timer = setInterval(() => void this.monitor(), this.monitorPeriodMs);
    });
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  /** One pass over every node (`monitorNodeHealth`); a pass still running is waited for, not doubled. */
  monitor(): Promise<void> {
    this.monitoring = this.monitoring.then(() => this.pass());
    return this.monitoring;
  }

  private async pass(): Promise<void> {
    const names = new Set<string>();
    for (const node of this.nodes.list()) {
      const name = node.metadata?.name ?? '';
      names.add(name);
      try {
        await this.check(node);
      } catch (e) {
        this.log.warn({ node: name, error: describeError(e) }, 'cannot update the node; trying at the next pass');
      }
    }
    for (const name of this.observed.keys()) if (!names.has(name)) this.observed.delete(name);
  }

  private async check(node: V1Node): Promise<void> {
    const name = node.metadata?.name ?? '';
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    const lease = this.leases.get(name, NODE_LEASE_NAMESPACE);
    const heartbeat = `${String(lease?.spec?.renewTime ?? '')}|${String(ready?.lastHeartbeatTime ?? '')}`;
    const seen = this.observed.get(name);
    const now = this.now();
    if (seen === undefined || seen.heartbeat !== heartbeat) this.observed.set(name, { heartbeat, at: now });
    const silentFor = now - (this.observed.get(name)?.at ?? now);
    let status = ready?.status ?? 'Unknown';
    if (silentFor > this.gracePeriodMs && ready?.status !== 'Unknown') {
      await this.markUnknown(node);
      status = 'Unknown';
    }
    await this.taint(node, status);
    if (status !== 'True') await this.markPodsNotReady(name);
  }

  /** Every kubelet condition Unknown: the kubelet stopped posting. */
  private async markUnknown(node: V1Node): Promise<void> {
    const name = node.metadata?.name ?? '';
    const now = kubeTime(this.now());
    const conditions = KUBELET_CONDITIONS.map((type) => {
      const before = node.status?.conditions?.find((c) => c.type === type);
      return {
        type,
        status: 'Unknown',
        reason: 'NodeStatusUnknown',
        message: 'Kubelet stopped posting node status.',
        lastHeartbeatTime: before?.lastHeartbeatTime ?? null,
        lastTransitionTime: before?.status === 'Unknown' ? before.lastTransitionTime : now,
      };
    });
    await this.core.patchNodeStatus({ name, body: { status: { conditions } } }, STRATEGIC_MERGE);
    this.log.warn({ node: name, gracePeriodMs: this.gracePeriodMs }, 'node stopped posting status: Ready Unknown');
  }

  /** The taints the Ready condition's status calls for, in place of the ones it called for before. */
  private async taint(node: V1Node, ready: string): Promise<void> {
    const key = TAINT_BY_READY[ready];
    const owned = new Set(Object.values(TAINT_BY_READY));
    const taints = node.spec?.taints ?? [];
    const kept = taints.filter((t) => !owned.has(t.key));
    const wanted: V1Taint[] =
      key === undefined
        ? []
        : (['NoSchedule', 'NoExecute'] as const).map(
            (effect) => taints.find((t) => t.key === key && t.effect === effect) ?? { key, effect },
          );
    const added = kubeTime(this.now());
    const next: V1Taint[] = [
      ...kept,
      ...wanted.map((t) => ({
        key: t.key,
        effect: t.effect,
        ...(t.effect === 'NoExecute' ? { timeAdded: t.timeAdded ?? (added as unknown as Date) } : {}),
      })),
    ];
    const same = (a: V1Taint[], b: V1Taint[]): boolean =>
      a.length === b.length && a.every((t) => b.some((u) => u.key === t.key && u.effect === t.effect));
    if (same(taints, next)) return;
    await this.core.patchNode({ name: node.metadata?.name ?? '', body: { spec: { taints: next } } }, MERGE_PATCH);
  }

  /** Every Ready pod on the node reported not Ready, as its kubelet can no longer vouch for it. */
  private async markPodsNotReady(node: string): Promise<void> {
    for (const p of this.pods.list().filter((x) => x.spec?.nodeName === node && isPodReady(x))) {
      await this.core
        .patchNamespacedPodStatus(
          {
            name: p.metadata?.name ?? '',
            namespace: p.metadata?.namespace ?? '',
            body: {
              status: { conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: kubeTime(this.now()) }] },
            },
          },
          STRATEGIC_MERGE,
        )
        .catch((e: unknown) => {
          if ((e as { code?: number }).code !== 404) throw e;
        });
    }
  }
}
