/**
 * What the controllers that make pods share (k8s.io/kubernetes `pkg/controller`: the ReplicaSet, DaemonSet and
 * StatefulSet controllers): an informer of their owner kind and one of pods, a queue keyed by owner
 * (`namespace/name`) that every event of an owner or of a pod it controls adds to, expectations of the pod
 * creations and deletions in flight (`owned-pods.ts`), and reconciling only once every informer has listed. A
 * subclass says how one owner is brought to its desired state.
 */
import { AppsV1Api, CoreV1Api, type KubeConfig, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import type { RestartingInformer } from '../kube/informer.js';
import { ReconcileQueue } from '../kube/reconcile-queue.js';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import type { Logger } from '../lib/log.js';
import { Expectations } from './expectations.js';
import { followOwnedPods } from './owned-pods.js';
import { controllerOf, keyOf, splitKey } from './owned-objects.js';

/** A reconcile that keeps failing is retried this many times, then left until the owner's next event. */
const MAX_ATTEMPTS = 15;

export abstract class PodOwnerController<T extends KubernetesObject> {
  protected readonly owners: RestartingInformer<T>;
  protected readonly pods: RestartingInformer<V1Pod>;
  protected readonly queue: ReconcileQueue;
  protected readonly expectations: Expectations;
  protected readonly apps: AppsV1Api;
  protected readonly core: CoreV1Api;
  /** Informers a subclass reads besides the owners and pods: reconciling waits for them too. */
  private readonly others: { readonly synced: Promise<void> }[] = [];

  constructor(
    kc: KubeConfig,
    protected readonly informers: SharedInformerFactory,
    protected readonly log: Logger,
    kind: string,
    path: string,
    now: () => number = Date.now,
  ) {
    this.expectations = new Expectations(now);
    this.apps = kc.makeApiClient(AppsV1Api);
    this.core = kc.makeApiClient(CoreV1Api);
    this.queue = new ReconcileQueue((key) => this.reconcile(key), MAX_ATTEMPTS, log);
    const enqueue = (o: T): void => this.queue.add(keyOf(o.metadata));
    this.owners = informers.informerFor<T>(path);
    this.owners.addEventHandler({
      add: enqueue,
      update: enqueue,
      delete: (o) => this.forget(keyOf(o.metadata)),
    });
    this.pods = informers.informerFor<V1Pod>('/api/v1/pods');
    followOwnedPods(this.pods, kind, this.expectations, (key) => this.queue.add(key));
  }

  /** Resolves once every informer the controller reads has listed. */
  get synced(): Promise<void> {
    return Promise.all([this.owners.synced, this.pods.synced, ...this.others.map((i) => i.synced)]).then(
      () => undefined,
    );
  }

  /** Reconciles once the informers (which the factory starts) have listed. */
  start(): void {
    void this.synced.then(() => this.queue.run());
  }

  stop(): void {
    this.queue.stop();
  }

  /** Another informer the subclass reads, made and waited for like the owners'. */
  protected alsoRead<U extends KubernetesObject>(path: string): RestartingInformer<U> {
    const inf = this.informers.informerFor<U>(path);
    this.others.push(inf);
    return inf;
  }

  /** What is kept about an owner that is gone. */
  protected forget(key: string): void {
    this.expectations.forget(key);
  }

  /** The pods `owner` controls. */
  protected podsOf(owner: T): V1Pod[] {
    const uid = owner.metadata?.uid;
    return this.pods.list(owner.metadata?.namespace ?? '').filter((p) => controllerOf(p.metadata)?.uid === uid);
  }

  private async reconcile(key: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    const owner = this.owners.get(name, namespace);
    if (owner === undefined) {
      this.forget(key);
      return;
    }
    await this.sync(owner, key);
  }

  /** Brings one owner, keyed `key`, a step towards its desired state. */
  protected abstract sync(owner: T, key: string): Promise<void>;
}
