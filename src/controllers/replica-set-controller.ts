/**
 * The ReplicaSet controller (k8s.io/kubernetes `pkg/controller/replicaset/replica_set.go`): keeps as many active
 * pods as `spec.replicas` asks for, each made from the template with `generateName: <replicaset>-` and the
 * ReplicaSet as controller owner, and reports `status.replicas`, `readyReplicas` and `availableReplicas`.
 * Surplus pods go in Kubernetes' order: unscheduled before scheduled, pending before running, not ready before
 * ready, newest first. Orphaned pods that match the selector are not adopted (Kubernetes would); pods are only
 * ever this controller's own.
 */
import {
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1Pod,
  type V1ReplicaSet,
  type V1ReplicaSetStatus,
} from '@kubernetes/client-node';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import { forEachLimited } from '../lib/for-each-limited.js';
import type { Logger } from '../lib/log.js';
import { createOwnedPod, deleteOwnedPod, podFromTemplate } from './owned-pods.js';
import { isPodActive, isPodReady } from './owned-objects.js';
import { PodOwnerController } from './pod-owner-controller.js';

/** Pod creates and deletes in flight per ReplicaSet. */
const WRITE_CONCURRENCY = 16;
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

export class ReplicaSetController extends PodOwnerController<V1ReplicaSet> {
  constructor(kc: KubeConfig, informers: SharedInformerFactory, log: Logger) {
    super(kc, informers, log, 'ReplicaSet', '/apis/apps/v1/replicasets');
  }

  protected async sync(rs: V1ReplicaSet, key: string): Promise<void> {
    const owned = this.podsOf(rs);
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
