/**
 * The Deployment controller (k8s.io/kubernetes `pkg/controller/deployment/`): each pod template gets a
 * ReplicaSet named `<deployment>-<pod-template-hash>`, labelled and selected by that hash, owned by the
 * Deployment and annotated with its `deployment.kubernetes.io/revision`. A template change makes a new
 * ReplicaSet and retires the old ones:
 * - `Recreate`: old ReplicaSets go to zero first, the new one is scaled up once their pods are gone;
 * - `RollingUpdate`: the new one is scaled up at once (a surge of up to 100%, where Kubernetes honours
 *   `maxSurge`), and old ones come down as the new one's pods become available, so available pods never drop
 *   below `spec.replicas` because of the rollout.
 *
 * Old ReplicaSets at zero beyond `revisionHistoryLimit` are deleted, oldest first. Status carries the replica
 * counts kubectl shows (READY, UP-TO-DATE, AVAILABLE) and the Available and Progressing conditions. A hash that
 * collides with a ReplicaSet the Deployment does not own bumps `status.collisionCount`, as Kubernetes does.
 */
import {
  AppsV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1Deployment,
  type V1ReplicaSet,
} from '@kubernetes/client-node';
import type { RestartingInformer } from '../kube/informer.js';
import { ReconcileQueue } from '../kube/reconcile-queue.js';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import type { Logger } from '../lib/log.js';
import { controllerOf, controllerReference, keyOf, splitKey } from './owned-objects.js';
import { scaledValue } from './int-or-percent.js';
import { podTemplateHash } from './pod-template-hash.js';
import { kubeTime } from '../lib/kube-time.js';

export const POD_TEMPLATE_HASH = 'pod-template-hash';
export const REVISION = 'deployment.kubernetes.io/revision';
/** apps/v1 defaults (`SetDefaults_Deployment`), for objects that reach the controller without them. */
const DEFAULT_REVISION_HISTORY_LIMIT = 10;
const DEFAULT_MAX_UNAVAILABLE = '25%';
const MAX_ATTEMPTS = 15;
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const revisionOf = (rs: V1ReplicaSet): number => Number(rs.metadata?.annotations?.[REVISION] ?? '0') || 0;
const specReplicas = (rs: V1ReplicaSet): number => rs.spec?.replicas ?? 1;
const sum = (rss: readonly V1ReplicaSet[], f: (rs: V1ReplicaSet) => number | undefined): number =>
  rss.reduce((n, rs) => n + (f(rs) ?? 0), 0);

export class DeploymentController {
  private readonly deployments: RestartingInformer<V1Deployment>;
  private readonly replicaSets: RestartingInformer<V1ReplicaSet>;
  private readonly queue: ReconcileQueue;
  private readonly apps: AppsV1Api;
  readonly synced: Promise<void>;

  constructor(
    kc: KubeConfig,
    informers: SharedInformerFactory,
    private readonly log: Logger,
  ) {
    this.apps = kc.makeApiClient(AppsV1Api);
    this.queue = new ReconcileQueue((key) => this.reconcile(key), MAX_ATTEMPTS, log);
    const enqueue = (d: V1Deployment): void => this.queue.add(keyOf(d.metadata));
    const owner = (rs: V1ReplicaSet): void => {
      const ref = controllerOf(rs.metadata);
      if (ref?.kind === 'Deployment') this.queue.add(`${rs.metadata?.namespace ?? ''}/${ref.name}`);
    };
    this.deployments = informers.informerFor<V1Deployment>('/apis/apps/v1/deployments');
    this.deployments.addEventHandler({ add: enqueue, update: enqueue });
    this.replicaSets = informers.informerFor<V1ReplicaSet>('/apis/apps/v1/replicasets');
    this.replicaSets.addEventHandler({ add: owner, update: owner, delete: owner });
    this.synced = Promise.all([this.deployments.synced, this.replicaSets.synced]).then(() => undefined);
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
    const d = this.deployments.get(name, namespace);
    if (d === undefined || d.metadata?.deletionTimestamp !== undefined) return;
    const owned = this.replicaSets.list(namespace).filter((rs) => controllerOf(rs.metadata)?.uid === d.metadata?.uid);
    const hash = podTemplateHash(d.spec?.template, d.status?.collisionCount);
    const current = owned.find((rs) => rs.metadata?.labels?.[POD_TEMPLATE_HASH] === hash);
    const old = owned.filter((rs) => rs !== current).sort((a, b) => revisionOf(a) - revisionOf(b));
    const desired = d.spec?.replicas ?? 1;
    if (current === undefined) {
      await this.createReplicaSet(d, hash, old, desired);
      return;
    }
    await this.annotateRevision(d, current);
    await this.rollOut(d, current, old, desired);
    await this.cleanUp(d, old);
    await this.updateStatus(d, current, owned, desired);
  }

  private async createReplicaSet(
    d: V1Deployment,
    hash: string,
    old: readonly V1ReplicaSet[],
    desired: number,
  ): Promise<void> {
    const meta = d.metadata ?? {};
    const template = d.spec?.template ?? {};
    const labels = { ...template.metadata?.labels, [POD_TEMPLATE_HASH]: hash };
    const recreating =
      d.spec?.strategy?.type === 'Recreate' && sum(old, (rs) => rs.status?.replicas) + sum(old, specReplicas) > 0;
    const body: V1ReplicaSet = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: `${meta.name ?? ''}-${hash}`,
        namespace: meta.namespace,
        labels,
        annotations: {
          [REVISION]: String(Math.max(0, ...old.map(revisionOf)) + 1),
          'deployment.kubernetes.io/desired-replicas': String(desired),
        },
        ownerReferences: [controllerReference('apps/v1', 'Deployment', meta)],
      },
      spec: {
        replicas: recreating ? 0 : desired,
        minReadySeconds: d.spec?.minReadySeconds,
        selector: {
          matchExpressions: d.spec?.selector.matchExpressions,
          matchLabels: { ...d.spec?.selector.matchLabels, [POD_TEMPLATE_HASH]: hash },
        },
        template: { metadata: { labels, annotations: template.metadata?.annotations }, spec: template.spec },
      },
    };
    try {
      await this.apps.createNamespacedReplicaSet({ namespace: meta.namespace ?? '', body });
      this.log.info({ deployment: keyOf(meta), replicaSet: body.metadata?.name }, 'replica set created');
    } catch (e) {
      if ((e as { code?: number }).code !== 409) throw e;
      // A ReplicaSet of that name the Deployment does not own: hash again with the next collision count.
      const existing = await this.apps.readNamespacedReplicaSet({
        name: body.metadata?.name ?? '',
        namespace: meta.namespace ?? '',
      });
      if (controllerOf(existing.metadata)?.uid === meta.uid) return;
      await this.patchStatus(d, { collisionCount: (d.status?.collisionCount ?? 0) + 1 });
    }
  }

  /**
   * Gives the Deployment its current ReplicaSet's revision, as Kubernetes does (SetDeploymentRevision): what
   * `kubectl rollout status` and installers read to find the ReplicaSet of the latest rollout.
   */
  private async annotateRevision(d: V1Deployment, current: V1ReplicaSet): Promise<void> {
    const revision = current.metadata?.annotations?.[REVISION];
    if (revision === undefined || d.metadata?.annotations?.[REVISION] === revision) return;
    await this.apps.patchNamespacedDeployment(
      {
        name: d.metadata?.name ?? '',
        namespace: d.metadata?.namespace ?? '',
        body: { metadata: { annotations: { [REVISION]: revision } } },
      },
      MERGE_PATCH,
    );
  }

  /** Scales the current ReplicaSet up and the old ones down, as the strategy allows. */
  private async rollOut(
    d: V1Deployment,
    current: V1ReplicaSet,
    old: readonly V1ReplicaSet[],
    desired: number,
  ): Promise<void> {
    if (d.spec?.strategy?.type === 'Recreate') {
      for (const rs of old) await this.scale(rs, 0);
      if (sum(old, (rs) => rs.status?.replicas) === 0) await this.scale(current, desired);
      return;
    }
    await this.scale(current, desired);
    // Old pods may go as new ones become available; the oldest ReplicaSets shrink first.
    let keep = Math.max(0, desired - (current.status?.availableReplicas ?? 0));
    for (const rs of [...old].reverse()) {
      const n = Math.min(specReplicas(rs), keep);
      keep -= n;
      await this.scale(rs, n);
    }
  }

  private async scale(rs: V1ReplicaSet, replicas: number): Promise<void> {
    if (specReplicas(rs) === replicas) return;
    await this.apps.patchNamespacedReplicaSet(
      { name: rs.metadata?.name ?? '', namespace: rs.metadata?.namespace ?? '', body: { spec: { replicas } } },
      MERGE_PATCH,
    );
    this.log.info({ replicaSet: keyOf(rs.metadata), replicas }, 'replica set scaled');
  }

  /** Deletes retired ReplicaSets beyond the revision history limit, oldest first. */
  private async cleanUp(d: V1Deployment, old: readonly V1ReplicaSet[]): Promise<void> {
    const retired = old.filter((rs) => specReplicas(rs) === 0 && (rs.status?.replicas ?? 0) === 0);
    const excess = retired.length - (d.spec?.revisionHistoryLimit ?? DEFAULT_REVISION_HISTORY_LIMIT);
    for (const rs of retired.slice(0, Math.max(0, excess))) {
      await this.apps
        .deleteNamespacedReplicaSet({ name: rs.metadata?.name ?? '', namespace: rs.metadata?.namespace ?? '' })
        .catch((e: unknown) => {
          if ((e as { code?: number }).code !== 404) throw e;
        });
    }
  }

  private async updateStatus(
    d: V1Deployment,
    current: V1ReplicaSet,
    owned: readonly V1ReplicaSet[],
    desired: number,
  ): Promise<void> {
    const available = sum(owned, (rs) => rs.status?.availableReplicas);
    const maxUnavailable =
      d.spec?.strategy?.type === 'Recreate'
        ? 0
        : scaledValue(d.spec?.strategy?.rollingUpdate?.maxUnavailable ?? DEFAULT_MAX_UNAVAILABLE, desired);
    const done =
      (current.status?.availableReplicas ?? 0) >= desired &&
      sum(owned, (rs) => rs.status?.replicas) === (current.status?.replicas ?? 0);
    const counts = {
      observedGeneration: d.metadata?.generation,
      replicas: sum(owned, (rs) => rs.status?.replicas),
      updatedReplicas: current.status?.replicas ?? 0,
      readyReplicas: sum(owned, (rs) => rs.status?.readyReplicas),
      availableReplicas: available,
      unavailableReplicas: Math.max(0, desired - available),
    };
    const conditions = [
      available >= desired - maxUnavailable
        ? {
            type: 'Available',
            status: 'True',
            reason: 'MinimumReplicasAvailable',
            message: 'Deployment has minimum availability.',
          }
        : {
            type: 'Available',
            status: 'False',
            reason: 'MinimumReplicasUnavailable',
            message: 'Deployment does not have minimum availability.',
          },
      done
        ? {
            type: 'Progressing',
            status: 'True',
            reason: 'NewReplicaSetAvailable',
            message: `ReplicaSet "${current.metadata?.name ?? ''}" has successfully progressed.`,
          }
        : {
            type: 'Progressing',
            status: 'True',
            reason: 'ReplicaSetUpdated',
            message: `ReplicaSet "${current.metadata?.name ?? ''}" is progressing.`,
          },
    ];
    const before = d.status ?? {};
    const sameCounts = (Object.keys(counts) as (keyof typeof counts)[]).every(
      (k) => (before[k] ?? 0) === (counts[k] ?? 0),
    );
    const sameConditions = conditions.every(
      (c) =>
        before.conditions?.some((b) => b.type === c.type && b.status === c.status && b.reason === c.reason) === true,
    );
    if (sameCounts && sameConditions) return;
    const now = kubeTime();
    // Times as the API writes them (RFC 3339 text): the informer's objects are the API's JSON, not client-node models.
    const stamped = conditions.map((c) => {
      const prev = before.conditions?.find((b) => b.type === c.type);
      return {
        ...c,
        lastUpdateTime: now,
        lastTransitionTime: prev !== undefined && prev.status === c.status ? prev.lastTransitionTime : now,
      };
    });
    await this.patchStatus(d, { ...counts, conditions: stamped });
  }

  private async patchStatus(d: V1Deployment, status: Record<string, unknown>): Promise<void> {
    await this.apps.patchNamespacedDeploymentStatus(
      { name: d.metadata?.name ?? '', namespace: d.metadata?.namespace ?? '', body: { status } },
      MERGE_PATCH,
    );
  }
}
