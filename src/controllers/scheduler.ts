/**
 * A pod scheduler for amesh's own clusters, after kube-scheduler's default profile reduced to what a
 * single-machine cluster needs: a pod with no `spec.nodeName` (and no other `schedulerName`) goes to a node it
 * fits (`node-predicates.ts`: schedulable and Ready unless the pod tolerates otherwise, its node selector and
 * required node affinity, its tolerations); among those, the one with the fewest active pods of the pod's own
 * controller (as kube-scheduler's default topology spreading scores a ReplicaSet's pods across hostnames), then
 * the fewest active pods, then by name. It binds through `pods/binding`, as kube-scheduler does. A node where
 * another pod holds a host port the pod asks for does not fit (the NodePorts plugin). A pod that fits nowhere gets `PodScheduled=False` with reason
 * `Unschedulable` and a `FailedScheduling` Event saying why, and waits for a node or pod to change.
 */
import {
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { EventRecorder } from '../kube/event-recorder.js';
import type { RestartingInformer } from '../kube/informer.js';
import { describeError } from '../lib/errors.js';
import { ReconcileQueue } from '../kube/reconcile-queue.js';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import type { Logger } from '../lib/log.js';
import { unfit } from './node-predicates.js';
import { isPodActive, keyOf, splitKey } from './owned-objects.js';
import { kubeTime } from '../lib/kube-time.js';
import { compareStrings } from '../lib/compare-strings.js';

export const DEFAULT_SCHEDULER_NAME = 'default-scheduler';

/** The uid of the controller that owns `p` (its ReplicaSet, StatefulSet, Job or DaemonSet), if any. */
const controllerUid = (p: V1Pod): string | undefined =>
  p.metadata?.ownerReferences?.find((o) => o.controller === true)?.uid;
const MAX_ATTEMPTS = 15;
/** Bindings in flight at once; the scheduling of the next pod waits for one to finish beyond this. */
const MAX_BINDS_IN_FLIGHT = 16;
/** A failed binding puts its pod back after kube-scheduler's initial pod back-off. */
const BIND_RETRY_MS = 1_000;
const STRATEGIC_MERGE = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

const unscheduled = (p: V1Pod): boolean =>
  (p.spec?.nodeName ?? '') === '' &&
  (p.spec?.schedulerName ?? DEFAULT_SCHEDULER_NAME) === DEFAULT_SCHEDULER_NAME &&
  isPodActive(p);

export class Scheduler {
  private readonly pods: RestartingInformer<V1Pod>;
  private readonly nodes: RestartingInformer<V1Node>;
  private readonly queue: ReconcileQueue;
  private readonly core: CoreV1Api;
  private readonly events: EventRecorder;
  /**
   * Pods bound but not yet seen bound by the informer, with their node: counted in the node's load, so pods
   * scheduled in a burst spread out (kube-scheduler's cache "assumes" a pod the same way).
   */
  private readonly assumed = new Map<string, string>();
  /** Pods whose binding is in flight, and the bindings. */
  private readonly binding = new Set<string>();
  private readonly inflight = new Set<Promise<void>>();
  private readonly retries = new Set<NodeJS.Timeout>();
  readonly synced: Promise<void>;

  constructor(
    kc: KubeConfig,
    informers: SharedInformerFactory,
    private readonly log: Logger,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.events = new EventRecorder(kc, DEFAULT_SCHEDULER_NAME);
    this.queue = new ReconcileQueue((key) => this.schedule(key), MAX_ATTEMPTS, log);
    const onPod = (p: V1Pod): void => {
      if ((p.spec?.nodeName ?? '') !== '') this.assumed.delete(keyOf(p.metadata));
      if (unscheduled(p)) this.queue.add(keyOf(p.metadata));
    };
    const onNode = (): void => {
      for (const p of this.pods.list()) onPod(p);
    };
    this.pods = informers.informerFor<V1Pod>('/api/v1/pods');
    this.pods.addEventHandler({
      add: onPod,
      update: onPod,
      // A pod gone frees its node (its host ports): the pods waiting for one are tried again.
      delete: (p) => {
        this.assumed.delete(keyOf(p.metadata));
        onNode();
      },
    });
    this.nodes = informers.informerFor<V1Node>('/api/v1/nodes');
    this.nodes.addEventHandler({ add: onNode, update: onNode });
    this.synced = Promise.all([this.pods.synced, this.nodes.synced]).then(() => undefined);
  }

  /** Schedules once the informers (which the factory starts) have listed. */
  start(): void {
    void this.synced.then(() => this.queue.run());
  }

  stop(): void {
    for (const t of this.retries) clearTimeout(t);
    this.retries.clear();
    this.queue.stop();
  }

  private async schedule(key: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    const pod = this.pods.get(name, namespace);
    if (pod === undefined || !unscheduled(pod) || this.binding.has(key)) return;
    const nodes = this.nodes.list();
    const reasons = new Map<string, number>();
    const fit: V1Node[] = [];
    const specsByNode = new Map<string, V1Pod['spec'][]>();
    for (const p of this.pods.list()) {
      const at = p.spec?.nodeName || this.assumed.get(keyOf(p.metadata));
      if (at !== undefined && at !== '' && isPodActive(p))
        specsByNode.set(at, [...(specsByNode.get(at) ?? []), p.spec]);
    }
    for (const n of nodes) {
      const why = unfit(n, pod.spec, specsByNode.get(n.metadata?.name ?? '') ?? []);
      if (why === undefined) fit.push(n);
      else reasons.set(why, (reasons.get(why) ?? 0) + 1);
    }
    if (fit.length === 0) {
      // Sorted as kube-scheduler's FitError sorts its histogram.
      const detail = [...reasons]
        .map(([why, count]) => `${String(count)} ${why}`)
        .sort(compareStrings)
        .join(', ');
      await this.markUnschedulable(
        pod,
        `0/${String(nodes.length)} nodes are available${detail === '' ? '' : `: ${detail}`}.`,
      );
      return;
    }
    const load = new Map<string, number>();
    const siblings = new Map<string, number>();
    const owner = controllerUid(pod);
    for (const p of this.pods.list()) {
      const on = p.spec?.nodeName || this.assumed.get(keyOf(p.metadata));
      if (!isPodActive(p) || on === undefined || on === '') continue;
      load.set(on, (load.get(on) ?? 0) + 1);
      if (owner !== undefined && controllerUid(p) === owner) siblings.set(on, (siblings.get(on) ?? 0) + 1);
    }
    const count = (m: Map<string, number>, n: string): number => m.get(n) ?? 0;
    const node = fit
      .map((n) => n.metadata?.name ?? '')
      .sort(
        (a, b) => count(siblings, a) - count(siblings, b) || count(load, a) - count(load, b) || compareStrings(a, b),
      )[0]!;
    // kube-scheduler's binding cycle: the pod is assumed on its node at once, so the next one is placed with it
    // counted, and bound while the next ones are scheduled, a bounded number at a time.
    this.assumed.set(key, node);
    this.binding.add(key);
    const bound = this.bind(key, node).finally(() => {
      this.binding.delete(key);
      this.inflight.delete(bound);
    });
    this.inflight.add(bound);
    if (this.inflight.size >= MAX_BINDS_IN_FLIGHT) await Promise.race(this.inflight);
  }

  /** Binds pod `key` to `node`; a failure forgets the assumption and schedules the pod again after a back-off. */
  private async bind(key: string, node: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    try {
      await this.core.createNamespacedPodBinding({
        name,
        namespace,
        body: { metadata: { name, namespace }, target: { apiVersion: 'v1', kind: 'Node', name: node } },
      });
      this.log.info({ pod: key, node }, 'pod scheduled');
    } catch (e) {
      // Bound meanwhile (by another scheduler, or by hand), or deleted: nothing left to do.
      const code = (e as { code?: number }).code;
      if (code === 409 || code === 404) return;
      this.assumed.delete(key);
      this.log.warn({ pod: key, node, error: describeError(e) }, 'binding failed; the pod is scheduled again');
      const t = setTimeout(() => {
        this.retries.delete(t);
        this.queue.add(key);
      }, BIND_RETRY_MS);
      this.retries.add(t);
    }
  }

  private async markUnschedulable(pod: V1Pod, message: string): Promise<void> {
    const current = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    if (current?.status === 'False' && current.message === message) return;
    await this.events
      .record({ apiVersion: 'v1', kind: 'Pod', metadata: pod.metadata }, 'Warning', 'FailedScheduling', message)
      .catch((e: unknown) => this.log.debug({ error: describeError(e) }, 'cannot record event'));
    const condition = {
      type: 'PodScheduled',
      status: 'False',
      reason: 'Unschedulable',
      message,
      lastProbeTime: null,
      lastTransitionTime: kubeTime(),
    };
    await this.core.patchNamespacedPodStatus(
      {
        name: pod.metadata?.name ?? '',
        namespace: pod.metadata?.namespace ?? '',
        body: { status: { phase: 'Pending', conditions: [condition] } },
      },
      STRATEGIC_MERGE,
    );
    this.log.info({ pod: keyOf(pod.metadata), message }, 'pod unschedulable');
  }
}
