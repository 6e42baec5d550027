/**
 * The StatefulSet controller (k8s.io/kubernetes `pkg/controller/statefulset`): pods with stable names
 * `<statefulset>-<ordinal>` (from `ordinals.start`), hostname the pod's name and subdomain the `serviceName`,
 * labelled `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index` and the `controller-revision-hash`
 * of their template's ControllerRevision (`<statefulset>-<hash>`, `controller-history.ts`).
 *
 * OrderedReady (the default) starts ordinals in order, each once its predecessor is Running and Ready, and removes
 * surplus pods from the highest ordinal down, one at a time, once the others are Running and Ready. Parallel
 * starts and removes them all at once. A failed pod is deleted and made again under the same name. A new template
 * rolls out per `updateStrategy`: RollingUpdate replaces pods from the highest ordinal down to `partition`, one at
 * a time, each once the one before it is ready again; OnDelete waits for pods to be deleted by hand.
 *
 * amesh's clusters have no PersistentVolumes: a StatefulSet with `volumeClaimTemplates` gets no pods and a
 * Warning Event `FailedCreate` that says so, once per generation.
 */
import {
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1ControllerRevision,
  type V1Pod,
  type V1StatefulSet,
  type V1StatefulSetStatus,
} from '@kubernetes/client-node';
import { EventRecorder } from '../kube/event-recorder.js';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import type { Logger } from '../lib/log.js';
import { CONTROLLER_REVISION_HASH, ControllerHistory } from './controller-history.js';
import { createOwnedPod, deleteOwnedPod, podFromTemplate } from './owned-pods.js';
import { isPodReady, keyOf } from './owned-objects.js';
import { PodOwnerController } from './pod-owner-controller.js';
import { podTemplateHash } from './pod-template-hash.js';

export const POD_NAME_LABEL = 'statefulset.kubernetes.io/pod-name';
export const POD_INDEX_LABEL = 'apps.kubernetes.io/pod-index';
/** The component the Events are from, as kube-controller-manager's StatefulSet controller names itself. */
const EVENT_COMPONENT = 'statefulset-controller';
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const STATUS_FIELDS = [
  'replicas',
  'readyReplicas',
  'currentReplicas',
  'updatedReplicas',
  'availableReplicas',
  'currentRevision',
  'updateRevision',
  'observedGeneration',
] as const;

const healthy = (p: V1Pod): boolean =>
  p.status?.phase === 'Running' && isPodReady(p) && p.metadata?.deletionTimestamp === undefined;

/** The ordinal a pod's name ends with, or undefined for a name this StatefulSet would not give. */
function ordinalOf(sts: V1StatefulSet, p: V1Pod): number | undefined {
  const prefix = `${sts.metadata?.name ?? ''}-`;
  const name = p.metadata?.name ?? '';
  if (!name.startsWith(prefix) || !/^\d+$/.test(name.slice(prefix.length))) return undefined;
  return Number(name.slice(prefix.length));
}

/** One step's writes: pods to create by ordinal, and pods to delete. */
interface Step {
  readonly create: number[];
  readonly remove: V1Pod[];
}

export class StatefulSetController extends PodOwnerController<V1StatefulSet> {
  private readonly history: ControllerHistory;
  private readonly events: EventRecorder;
  /** `uid/generation` of StatefulSets already told that their volume claims cannot be made. */
  private readonly warned = new Set<string>();

  constructor(kc: KubeConfig, informers: SharedInformerFactory, log: Logger) {
    super(kc, informers, log, 'StatefulSet', '/apis/apps/v1/statefulsets');
    this.events = new EventRecorder(kc, EVENT_COMPONENT);
    this.history = new ControllerHistory(
      this.apps,
      this.alsoRead<V1ControllerRevision>('/apis/apps/v1/controllerrevisions'),
    );
  }

  protected async sync(sts: V1StatefulSet, key: string): Promise<void> {
    const meta = sts.metadata ?? {};
    if (meta.deletionTimestamp !== undefined) return;
    if ((sts.spec?.volumeClaimTemplates ?? []).length > 0) {
      await this.refuseClaims(sts);
      return;
    }
    const revision = ControllerHistory.revisionName(
      meta,
      podTemplateHash(sts.spec?.template, sts.status?.collisionCount),
    );
    const owned = this.podsOf(sts);
    await this.history.keep(
      {
        kind: 'StatefulSet',
        meta,
        template: sts.spec?.template,
        revisionHistoryLimit: sts.spec?.revisionHistoryLimit,
      },
      revision.slice((meta.name ?? '').length + 1),
      new Set(owned.map((p) => p.metadata?.labels?.[CONTROLLER_REVISION_HASH] ?? '')),
    );
    if (this.expectations.satisfied(key)) {
      const { create, remove } = this.step(sts, owned, revision);
      this.expectations.expect(key, create.length, remove.length);
      await Promise.all([
        ...create.map((ordinal) => this.createPod(key, sts, revision, ordinal)),
        ...remove.map((p) => deleteOwnedPod(this.core, this.expectations, key, p)),
      ]);
      if (create.length + remove.length > 0)
        this.log.info({ statefulSet: key, created: create, deleted: remove.length }, 'stateful pods reconciled');
    }
    await this.updateStatus(sts, owned, revision);
  }

  /** What to create and delete next (`StatefulSetControl.UpdateStatefulSet`'s order). */
  private step(sts: V1StatefulSet, owned: readonly V1Pod[], revision: string): Step {
    const parallel = sts.spec?.podManagementPolicy === 'Parallel';
    const start = sts.spec?.ordinals?.start ?? 0;
    const end = start + (sts.spec?.replicas ?? 1);
    const byOrdinal = new Map<number, V1Pod>();
    const condemned: V1Pod[] = [];
    for (const p of owned) {
      const ordinal = ordinalOf(sts, p);
      if (ordinal !== undefined && ordinal >= start && ordinal < end) byOrdinal.set(ordinal, p);
      else condemned.push(p);
    }
    const create: number[] = [];
    const remove: V1Pod[] = [];
    const terminating = (p: V1Pod): boolean => p.metadata?.deletionTimestamp !== undefined;
    for (let ordinal = start; ordinal < end; ordinal++) {
      const p = byOrdinal.get(ordinal);
      if (p === undefined) {
        create.push(ordinal);
        if (parallel) continue;
        return { create, remove };
      }
      if (p.status?.phase === 'Failed' && !terminating(p)) {
        remove.push(p);
        if (parallel) continue;
        return { create, remove };
      }
      if (!parallel && !healthy(p)) return { create, remove };
    }
    const doomed = condemned
      .filter((p) => !terminating(p))
      .sort((a, b) => (ordinalOf(sts, b) ?? Infinity) - (ordinalOf(sts, a) ?? Infinity));
    if (parallel) remove.push(...doomed);
    else if (doomed.length > 0) {
      if (!condemned.some(terminating)) remove.push(doomed[0]!);
      return { create, remove };
    }
    if (sts.spec?.updateStrategy?.type === 'OnDelete') return { create, remove };
    const partition = sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0;
    for (let ordinal = end - 1; ordinal >= Math.max(start, partition); ordinal--) {
      const p = byOrdinal.get(ordinal);
      if (p === undefined || terminating(p) || !healthy(p)) break;
      if (p.metadata?.labels?.[CONTROLLER_REVISION_HASH] !== revision) {
        remove.push(p);
        break;
      }
    }
    return { create, remove };
  }

  private async createPod(key: string, sts: V1StatefulSet, revision: string, ordinal: number): Promise<void> {
    const body = podFromTemplate('apps/v1', 'StatefulSet', sts.metadata, sts.spec?.template);
    const name = `${sts.metadata?.name ?? ''}-${String(ordinal)}`;
    const meta = body.metadata!;
    delete meta.generateName;
    meta.name = name;
    Object.assign(meta.labels!, {
      [CONTROLLER_REVISION_HASH]: revision,
      [POD_NAME_LABEL]: name,
      [POD_INDEX_LABEL]: String(ordinal),
    });
    body.spec!.hostname = name;
    if ((sts.spec?.serviceName ?? '') !== '') body.spec!.subdomain = sts.spec?.serviceName;
    await createOwnedPod(this.core, this.expectations, key, body);
  }

  private async refuseClaims(sts: V1StatefulSet): Promise<void> {
    const seen = `${sts.metadata?.uid ?? ''}/${String(sts.metadata?.generation ?? 0)}`;
    if (this.warned.has(seen)) return;
    const claims = (sts.spec?.volumeClaimTemplates ?? []).map((c) => c.metadata?.name ?? '').join(', ');
    await this.events.record(
      { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: sts.metadata },
      'Warning',
      'FailedCreate',
      `volumeClaimTemplates (${claims}) cannot be provisioned: this cluster has no PersistentVolumes or storage classes; no pod is created. Use an emptyDir or hostPath volume in the pod template instead`,
    );
    this.warned.add(seen);
    this.log.warn({ statefulSet: keyOf(sts.metadata), claims }, 'volumeClaimTemplates refused');
  }

  private async updateStatus(sts: V1StatefulSet, owned: readonly V1Pod[], revision: string): Promise<void> {
    const live = owned.filter((p) => p.metadata?.deletionTimestamp === undefined);
    const ready = live.filter((p) => isPodReady(p)).length;
    const updated = live.filter((p) => p.metadata?.labels?.[CONTROLLER_REVISION_HASH] === revision).length;
    const previous = sts.status?.currentRevision ?? revision;
    const replicas = sts.spec?.replicas ?? 1;
    const currentRevision = updated === live.length && updated === replicas ? revision : previous;
    const status: Pick<V1StatefulSetStatus, (typeof STATUS_FIELDS)[number]> = {
      replicas: live.length,
      readyReplicas: ready,
      currentReplicas: live.filter((p) => p.metadata?.labels?.[CONTROLLER_REVISION_HASH] === currentRevision).length,
      updatedReplicas: updated,
      availableReplicas: ready,
      currentRevision,
      updateRevision: revision,
      observedGeneration: sts.metadata?.generation,
    };
    if (STATUS_FIELDS.every((f) => (sts.status?.[f] ?? 0) === (status[f] ?? 0))) return;
    await this.apps.patchNamespacedStatefulSetStatus(
      { name: sts.metadata?.name ?? '', namespace: sts.metadata?.namespace ?? '', body: { status } },
      MERGE_PATCH,
    );
  }
}
