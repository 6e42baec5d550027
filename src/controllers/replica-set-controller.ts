/**
 * The ReplicaSet controller (k8s.io/kubernetes `pkg/controller/replicaset/replica_set.go`): keeps as many active
 * pods as `spec.replicas` asks for, each made from the template with `generateName: <replicaset>-` and the
 * ReplicaSet as controller owner, and reports `status.replicas`, `readyReplicas` and `availableReplicas`.
 * Surplus pods go in Kubernetes' order: unscheduled before scheduled, pending before running, not ready before
 * ready, newest first. Orphaned pods that match the selector are not adopted (Kubernetes would); pods are only
 * ever this controller's own.
 */
import {
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1Pod,
  type V1ReplicaSet,
  type V1ReplicaSetStatus,
} from '@kubernetes/client-node';
import type { RestartingInformer } from '../kube/informer.js';
import { ReconcileQueue } from '../kube/reconcile-queue.js';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import { forEachLimited } from '../lib/for-each-limited.js';
import type { Logger } from '../lib/log.js';
import { Expectations } from './expectations.js';
import { createOwnedPod, deleteOwnedPod, followOwnedPods, podFromTemplate } from './owned-pods.js';
import { controllerOf, isPodActive, isPodReady, keyOf, splitKey } from './owned-objects.js';

/** Pod creates and deletes in flight per ReplicaSet. */
const WRITE_CONCURRENCY = 16;
/** A ReplicaSet whose reconcile keeps failing is retried this many times, then left until its next event. */
const MAX_ATTEMPTS = 15;
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** The status fields this controller owns; a zero and an absent field are the same (Go's omitempty). */
const STATUS_FIELDS = [
  'replicas',
  'fullyLabeledReplicas',
  'readyReplicas',
  'availableReplicas',
  'observedGeneration',
] as const;
type StatusField = (typeof STATUS_FIELDS)[number];

/** Pending before Unknown before Running, as controller.ActivePods ranks pod phases. */
const PHASE_RANK: Readonly<Record<string, number>> = { Pending: 0, Unknown: 1, Running: 2 };

/** Lower first: the pods a scale-down removes first (controller.ActivePods ordering, simplified). */
function deletionRank(p: V1Pod): number[] {
  const phase = PHASE_RANK[p.status?.phase ?? ''] ?? 1;
  const created = Date.parse(p.metadata?.creationTimestamp as unknown as string) || 0;
  return [p.spec?.nodeName === undefined || p.spec.nodeName === '' ? 0 : 1, phase, isPodReady(p) ? 1 : 0, -created];
}

function byDeletionRank(a: V1Pod, b: V1Pod): number {
  const ra = deletionRank(a);
  const rb = deletionRank(b);
  for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return ra[i]! - rb[i]!;
  return 0;
}

export class ReplicaSetController {
  private readonly replicaSets: RestartingInformer<V1ReplicaSet>;
  private readonly pods: RestartingInformer<V1Pod>;
  private readonly queue: ReconcileQueue;
  private readonly expectations = new Expectations();
  private readonly apps: AppsV1Api;
  private readonly core: CoreV1Api;
  readonly synced: Promise<void>;

  constructor(
    kc: KubeConfig,
    informers: SharedInformerFactory,
    private readonly log: Logger,
  ) {
    this.apps = kc.makeApiClient(AppsV1Api);
    this.core = kc.makeApiClient(CoreV1Api);
    this.queue = new ReconcileQueue((key) => this.reconcile(key), MAX_ATTEMPTS, log);
    const enqueue = (rs: V1ReplicaSet): void => this.queue.add(keyOf(rs.metadata));
    this.replicaSets = informers.informerFor<V1ReplicaSet>('/apis/apps/v1/replicasets');
    this.replicaSets.addEventHandler({
      add: enqueue,
      update: enqueue,
      delete: (rs) => this.expectations.forget(keyOf(rs.metadata)),
    });
    this.pods = informers.informerFor<V1Pod>('/api/v1/pods');
    followOwnedPods(this.pods, 'ReplicaSet', this.expectations, (key) => this.queue.add(key));
    this.synced = Promise.all([this.replicaSets.synced, this.pods.synced]).then(() => undefined);
  }

  /** Reconciles once the informers (which the factory starts) have listed. */
  start(): void {
    void this.synced.then(() => this.queue.run());
  }

  stop(): void {
    this.queue.stop();
  }

  private async reconcile(key: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    const rs = this.replicaSets.get(name, namespace);
    if (rs === undefined) {
      this.expectations.forget(key);
      return;
    }
    const uid = rs.metadata?.uid;
    const owned = this.pods.list(namespace).filter((p) => controllerOf(p.metadata)?.uid === uid);
    const active = owned.filter(isPodActive);
    if (rs.metadata?.deletionTimestamp === undefined && this.expectations.satisfied(key)) {
      const diff = active.length - (rs.spec?.replicas ?? 1);
      if (diff < 0) await this.createPods(key, rs, -diff);
      else if (diff > 0) await this.deletePods(key, [...active].sort(byDeletionRank).slice(0, diff));
    }
    await this.updateStatus(rs, active);
  }

  private async createPods(key: string, rs: V1ReplicaSet, n: number): Promise<void> {
    this.expectations.expect(key, n, 0);
    const body = podFromTemplate('apps/v1', 'ReplicaSet', rs.metadata, rs.spec?.template);
    await forEachLimited([...Array(n).keys()], WRITE_CONCURRENCY, () =>
      createOwnedPod(this.core, this.expectations, key, body),
    );
    this.log.info({ replicaSet: key, created: n }, 'pods created');
  }

  private async deletePods(key: string, pods: readonly V1Pod[]): Promise<void> {
    this.expectations.expect(key, 0, pods.length);
    await forEachLimited(pods, WRITE_CONCURRENCY, (p) => deleteOwnedPod(this.core, this.expectations, key, p));
    this.log.info({ replicaSet: key, deleted: pods.length }, 'pods deleted');
  }

  private async updateStatus(rs: V1ReplicaSet, active: readonly V1Pod[]): Promise<void> {
    const labels = rs.spec?.template?.metadata?.labels ?? {};
    const ready = active.filter(isPodReady).length;
    const status: Pick<V1ReplicaSetStatus, StatusField> = {
      replicas: active.length,
      fullyLabeledReplicas: active.filter((p) =>
        Object.entries(labels).every(([k, v]) => p.metadata?.labels?.[k] === v),
      ).length,
      readyReplicas: ready,
      // minReadySeconds is not waited out: a ready pod counts as available at once.
      availableReplicas: ready,
      observedGeneration: rs.metadata?.generation,
    };
    if (STATUS_FIELDS.every((f) => (rs.status?.[f] ?? 0) === (status[f] ?? 0))) return;
    await this.apps.patchNamespacedReplicaSetStatus(
      { name: rs.metadata?.name ?? '', namespace: rs.metadata?.namespace ?? '', body: { status } },
      MERGE_PATCH,
    );
  }
}
