/**
 * The DaemonSet controller (k8s.io/kubernetes `pkg/controller/daemon`): one pod on every node the DaemonSet's pods
 * fit (`node-predicates.ts`, with the tolerations the controller adds to daemon pods), none elsewhere. Each pod is
 * named `<daemonset>-<suffix>`, owned by the DaemonSet, labelled with the template's `controller-revision-hash`
 * and `pod-template-generation`, and pinned to its node by required node affinity on `metadata.name`, which the
 * scheduler honours, as upstream's are. A failed pod is deleted and made again. Every template is kept as a
 * ControllerRevision `<daemonset>-<hash>`, up to `revisionHistoryLimit` old ones.
 *
 * A new template rolls out per `updateStrategy`: OnDelete waits for old pods to be deleted by hand; RollingUpdate
 * deletes old pods while at most `maxUnavailable` nodes lack a ready pod, or, with `maxSurge`, starts the new pod
 * beside the old one on up to that many nodes and deletes the old one once the new one is ready. Status carries
 * upstream's counts. `minReadySeconds` is not waited out: a ready pod is available at once.
 */
import {
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1ControllerRevision,
  type V1DaemonSet,
  type V1DaemonSetStatus,
  type V1Node,
  type V1Pod,
  type V1PodSpec,
  type V1Toleration,
} from '@kubernetes/client-node';
import type { RestartingInformer } from '../kube/informer.js';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import { compareStrings } from '../lib/compare-strings.js';
import type { Logger } from '../lib/log.js';
import { CONTROLLER_REVISION_HASH, ControllerHistory } from './controller-history.js';
import { createOwnedPod, deleteOwnedPod, podFromTemplate } from './owned-pods.js';
import { scaledValue } from './int-or-percent.js';
import { UNSCHEDULABLE_TAINT, unfit } from './node-predicates.js';
import { isPodReady, keyOf } from './owned-objects.js';
import { PodOwnerController } from './pod-owner-controller.js';
import { podTemplateHash } from './pod-template-hash.js';

export const POD_TEMPLATE_GENERATION = 'pod-template-generation';
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const STATUS_FIELDS = [
  'currentNumberScheduled',
  'numberMisscheduled',
  'desiredNumberScheduled',
  'numberReady',
  'updatedNumberScheduled',
  'numberAvailable',
  'numberUnavailable',
  'observedGeneration',
] as const;

/** What `AddOrUpdateDaemonPodTolerations` adds: daemons stay through node trouble and run on cordoned nodes. */
function daemonTolerations(spec: V1PodSpec | undefined): V1Toleration[] {
  const added: [string, string][] = [
    ['node.kubernetes.io/not-ready', 'NoExecute'],
    ['node.kubernetes.io/unreachable', 'NoExecute'],
    ['node.kubernetes.io/disk-pressure', 'NoSchedule'],
    ['node.kubernetes.io/memory-pressure', 'NoSchedule'],
    ['node.kubernetes.io/pid-pressure', 'NoSchedule'],
    [UNSCHEDULABLE_TAINT, 'NoSchedule'],
  ];
  if (spec?.hostNetwork === true) added.push(['node.kubernetes.io/network-unavailable', 'NoSchedule']);
  const own = spec?.tolerations ?? [];
  return [
    ...own,
    ...added
      .filter(([key, effect]) => !own.some((t) => t.key === key && t.effect === effect))
      .map(([key, effect]) => ({ key, operator: 'Exists', effect })),
  ];
}

/** The template's pod spec as the daemon pod for `node` has it (`ReplaceDaemonSetPodNodeNameNodeAffinity`). */
function podSpecFor(spec: V1PodSpec | undefined, node: string): V1PodSpec {
  const out: V1PodSpec = structuredClone(spec ?? { containers: [] });
  out.tolerations = daemonTolerations(spec);
  out.affinity ??= {};
  out.affinity.nodeAffinity ??= {};
  out.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution = {
    nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }] }],
  };
  return out;
}

/** The node a daemon pod is for: where it runs, else the node its affinity pins it to. */
function nodeOf(p: V1Pod): string {
  if ((p.spec?.nodeName ?? '') !== '') return p.spec!.nodeName!;
  const terms = p.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  return terms?.[0]?.matchFields?.find((f) => f.key === 'metadata.name')?.values?.[0] ?? '';
}

const created = (p: V1Pod): number => Date.parse(String(p.metadata?.creationTimestamp ?? '')) || 0;
const oldestFirst = (a: V1Pod, b: V1Pod): number =>
  created(a) - created(b) || compareStrings(a.metadata?.name ?? '', b.metadata?.name ?? '');

/** What one node has of a DaemonSet: whether it should run it, and its pods of the current and of old templates. */
interface NodePods {
  readonly node: string;
  readonly shouldRun: boolean;
  readonly current: V1Pod[];
  readonly old: V1Pod[];
}

export class DaemonSetController extends PodOwnerController<V1DaemonSet> {
  private readonly nodes: RestartingInformer<V1Node>;
  private readonly history: ControllerHistory;

  constructor(kc: KubeConfig, informers: SharedInformerFactory, log: Logger) {
    super(kc, informers, log, 'DaemonSet', '/apis/apps/v1/daemonsets');
    const everyDaemonSet = (): void => {
      for (const ds of this.owners.list()) this.queue.add(keyOf(ds.metadata));
    };
    this.nodes = this.alsoRead<V1Node>('/api/v1/nodes');
    this.nodes.addEventHandler({ add: everyDaemonSet, update: everyDaemonSet, delete: everyDaemonSet });
    this.history = new ControllerHistory(
      this.apps,
      this.alsoRead<V1ControllerRevision>('/apis/apps/v1/controllerrevisions'),
    );
  }

  protected async sync(ds: V1DaemonSet, key: string): Promise<void> {
    if (ds.metadata?.deletionTimestamp !== undefined) return;
    const hash = podTemplateHash(ds.spec?.template, ds.status?.collisionCount);
    const meta = ds.metadata ?? {};
    const running = this.podsOf(ds).map((p) =>
      ControllerHistory.revisionName(meta, p.metadata?.labels?.[CONTROLLER_REVISION_HASH] ?? ''),
    );
    await this.history.keep(
      { kind: 'DaemonSet', meta, template: ds.spec?.template, revisionHistoryLimit: ds.spec?.revisionHistoryLimit },
      hash,
      new Set(running),
    );
    const nodes = this.nodePods(ds, hash);
    if (this.expectations.satisfied(key)) {
      const { create, remove } = this.plan(ds, nodes);
      this.expectations.expect(key, create.length, remove.length);
      await Promise.all([
        ...create.map((node) => this.createPod(key, ds, hash, node)),
        ...remove.map((p) => deleteOwnedPod(this.core, this.expectations, key, p)),
      ]);
      if (create.length + remove.length > 0)
        this.log.info({ daemonSet: key, created: create.length, deleted: remove.length }, 'daemon pods reconciled');
    }
    await this.updateStatus(ds, nodes);
  }

  /** Every node with what it has of `ds`; nodes without a pod that should have none are left out. */
  private nodePods(ds: V1DaemonSet, hash: string): NodePods[] {
    const owned = this.podsOf(ds).filter((p) => p.metadata?.deletionTimestamp === undefined);
    const template = ds.spec?.template.spec;
    // What decides where a daemon pod fits: the template's selectors and affinity, and the daemon tolerations.
    const spec: V1PodSpec = {
      containers: [],
      nodeSelector: template?.nodeSelector,
      affinity: template?.affinity,
      tolerations: daemonTolerations(template),
    };
    const names = new Set<string>();
    const out: NodePods[] = [];
    const add = (node: string, shouldRun: boolean): void => {
      const here = owned.filter((p) => nodeOf(p) === node).sort(oldestFirst);
      if (!shouldRun && here.length === 0) return;
      const isCurrent = (p: V1Pod): boolean => p.metadata?.labels?.[CONTROLLER_REVISION_HASH] === hash;
      out.push({ node, shouldRun, current: here.filter(isCurrent), old: here.filter((p) => !isCurrent(p)) });
    };
    for (const n of this.nodes.list()) {
      const node = n.metadata?.name ?? '';
      names.add(node);
      add(node, unfit(n, spec) === undefined);
    }
    for (const node of new Set(owned.map(nodeOf))) if (!names.has(node)) add(node, false);
    return out.sort((a, b) => compareStrings(a.node, b.node));
  }

  /** The pods to create (by node) and to delete for one step towards the DaemonSet's desired state. */
  private plan(ds: V1DaemonSet, nodes: readonly NodePods[]): { create: string[]; remove: V1Pod[] } {
    const create: string[] = [];
    const remove: V1Pod[] = [];
    const rolling = ds.spec?.updateStrategy?.type !== 'OnDelete';
    const desired = nodes.filter((n) => n.shouldRun).length;
    const rollingUpdate = ds.spec?.updateStrategy?.rollingUpdate;
    const maxSurge = rolling ? scaledValue(rollingUpdate?.maxSurge ?? 0, desired, true) : 0;
    const maxUnavailable = rolling ? scaledValue(rollingUpdate?.maxUnavailable ?? 1, desired, true) : 0;
    let unavailable = nodes.filter(
      (n) => n.shouldRun && ![...n.current, ...n.old].some((p) => p.status?.phase !== 'Failed' && isPodReady(p)),
    ).length;
    let surging = 0;
    for (const n of nodes) {
      const failed = [...n.current, ...n.old].filter((p) => p.status?.phase === 'Failed');
      remove.push(...failed);
      const current = n.current.filter((p) => !failed.includes(p));
      const old = n.old.filter((p) => !failed.includes(p));
      if (!n.shouldRun) {
        remove.push(...current, ...old);
        continue;
      }
      // One pod per node, the oldest; while surging, the oldest of each template.
      const keep = maxSurge > 0 ? [current[0], old[0]] : [[...current, ...old].sort(oldestFirst)[0]];
      remove.push(...[...current, ...old].filter((p) => !keep.includes(p)));
      const newPod = current.find((p) => keep.includes(p));
      const oldPod = old.find((p) => keep.includes(p));
      if (newPod === undefined && oldPod === undefined) {
        create.push(n.node);
        continue;
      }
      if (!rolling || oldPod === undefined) continue;
      const oldReady = isPodReady(oldPod);
      if (maxSurge > 0) {
        if (newPod !== undefined) {
          if (isPodReady(newPod)) remove.push(oldPod);
          else surging++;
        } else if (!oldReady || surging < maxSurge) {
          if (oldReady) surging++;
          create.push(n.node);
        }
      } else if (!oldReady) remove.push(oldPod);
      else if (unavailable < maxUnavailable) {
        remove.push(oldPod);
        unavailable++;
      }
    }
    return { create, remove };
  }

  private async createPod(key: string, ds: V1DaemonSet, hash: string, node: string): Promise<void> {
    const body = podFromTemplate('apps/v1', 'DaemonSet', ds.metadata, ds.spec?.template);
    body.metadata!.labels![CONTROLLER_REVISION_HASH] = hash;
    body.metadata!.labels![POD_TEMPLATE_GENERATION] = String(ds.metadata?.generation ?? 1);
    body.spec = podSpecFor(ds.spec?.template.spec, node);
    await createOwnedPod(this.core, this.expectations, key, body);
  }

  private async updateStatus(ds: V1DaemonSet, nodes: readonly NodePods[]): Promise<void> {
    const should = nodes.filter((n) => n.shouldRun);
    const running = (n: NodePods): V1Pod[] => [...n.current, ...n.old];
    const ready = should.filter((n) => running(n).some(isPodReady)).length;
    const status: Pick<V1DaemonSetStatus, (typeof STATUS_FIELDS)[number]> = {
      desiredNumberScheduled: should.length,
      currentNumberScheduled: should.filter((n) => running(n).length > 0).length,
      numberMisscheduled: nodes.filter((n) => !n.shouldRun && running(n).length > 0).length,
      numberReady: ready,
      updatedNumberScheduled: should.filter((n) => n.current.length > 0).length,
      numberAvailable: ready,
      numberUnavailable: should.length - ready,
      observedGeneration: ds.metadata?.generation,
    };
    if (STATUS_FIELDS.every((f) => (ds.status?.[f] ?? 0) === (status[f] ?? 0))) return;
    await this.apps.patchNamespacedDaemonSetStatus(
      { name: ds.metadata?.name ?? '', namespace: ds.metadata?.namespace ?? '', body: { status } },
      MERGE_PATCH,
    );
  }
}
