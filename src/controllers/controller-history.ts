/**
 * The template history DaemonSets and StatefulSets keep as ControllerRevisions (k8s.io/kubernetes
 * `pkg/controller/history`): one revision `<owner>-<hash>` per template, owned by its DaemonSet or StatefulSet,
 * labelled with the hash and holding the template as a patch that replaces it. The current template's revision has
 * the highest number (a template that comes back is renumbered, as a rollback is); old revisions beyond the
 * owner's `revisionHistoryLimit` go, oldest first, except those a pod still runs (`cleanupHistory`).
 */
import {
  PatchStrategy,
  setHeaderOptions,
  type AppsV1Api,
  type V1ControllerRevision,
  type V1ObjectMeta,
  type V1PodTemplateSpec,
} from '@kubernetes/client-node';
import type { RestartingInformer } from '../kube/informer.js';
import { controllerOf, controllerReference } from './owned-objects.js';

export const CONTROLLER_REVISION_HASH = 'controller-revision-hash';
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const ignoring =
  (code: number) =>
  (e: unknown): void => {
    if ((e as { code?: number }).code !== code) throw e;
  };

export interface RevisionOwner {
  readonly kind: 'DaemonSet' | 'StatefulSet';
  readonly meta: V1ObjectMeta;
  readonly template: V1PodTemplateSpec | undefined;
  readonly revisionHistoryLimit: number | undefined;
}

export class ControllerHistory {
  constructor(
    private readonly apps: AppsV1Api,
    private readonly revisions: RestartingInformer<V1ControllerRevision>,
  ) {}

  /** The owner's revisions, oldest first. */
  of(meta: V1ObjectMeta): V1ControllerRevision[] {
    return this.revisions
      .list(meta.namespace ?? '')
      .filter((r) => controllerOf(r.metadata)?.uid === meta.uid)
      .sort((a, b) => a.revision - b.revision);
  }

  /** The name of the revision of `hash`: `<owner>-<hash>`, what a StatefulSet's pods are labelled with. */
  static revisionName(meta: V1ObjectMeta, hash: string): string {
    return `${meta.name ?? ''}-${hash}`;
  }

  /** Makes `hash`'s revision the newest, and trims the history, keeping the revisions named in `running`. */
  async keep(owner: RevisionOwner, hash: string, running: ReadonlySet<string>): Promise<void> {
    const { meta, template } = owner;
    const namespace = meta.namespace ?? '';
    const owned = this.of(meta);
    const name = ControllerHistory.revisionName(meta, hash);
    const top = Math.max(0, ...owned.map((r) => r.revision));
    const current = owned.find((r) => r.metadata?.name === name);
    if (current === undefined)
      await this.apps
        .createNamespacedControllerRevision({
          namespace,
          body: {
            apiVersion: 'apps/v1',
            kind: 'ControllerRevision',
            metadata: {
              name,
              namespace,
              labels: { ...template?.metadata?.labels, [CONTROLLER_REVISION_HASH]: hash },
              ownerReferences: [controllerReference('apps/v1', owner.kind, meta)],
            },
            data: { spec: { template: { $patch: 'replace', metadata: template?.metadata, spec: template?.spec } } },
            revision: top + 1,
          },
        })
        .catch(ignoring(409));
    else if (current.revision < top)
      await this.apps.patchNamespacedControllerRevision({ name, namespace, body: { revision: top + 1 } }, MERGE_PATCH);
    const history = owned.filter((r) => r.metadata?.name !== name && !running.has(r.metadata?.name ?? ''));
    const excess = history.length - (owner.revisionHistoryLimit ?? 10);
    for (const r of history.slice(0, Math.max(0, excess)))
      await this.apps
        .deleteNamespacedControllerRevision({ name: r.metadata?.name ?? '', namespace })
        .catch(ignoring(404));
  }
}
