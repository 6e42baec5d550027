/**
 * What the ServiceAccounts controller and the root CA publisher share: each keeps one object in every active
 * namespace, so each reconciles by namespace, when a namespace appears or changes and when its own object is
 * changed or deleted by someone else; a namespace that is going away is left alone.
 */
import type { KubeConfig, KubernetesObject, V1Namespace } from '@kubernetes/client-node';
import { CoreV1Api } from '@kubernetes/client-node';
import type { RestartingInformer } from '../kube/informer.js';
import { ReconcileQueue } from '../kube/reconcile-queue.js';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import type { Logger } from '../lib/log.js';

const MAX_ATTEMPTS = 15;

export abstract class NamespaceObjectController<T extends KubernetesObject> {
  private readonly namespaces: RestartingInformer<V1Namespace>;
  protected readonly objects: RestartingInformer<T>;
  protected readonly core: CoreV1Api;
  private readonly queue: ReconcileQueue;
  readonly synced: Promise<void>;

  /** `path`: the resource of the kept objects; `name`: the kept object's name in each namespace. */
  constructor(
    kc: KubeConfig,
    informers: SharedInformerFactory,
    path: string,
    protected readonly name: string,
    log: Logger,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.queue = new ReconcileQueue((ns) => this.reconcile(ns), MAX_ATTEMPTS, log);
    this.namespaces = informers.informerFor<V1Namespace>('/api/v1/namespaces');
    this.objects = informers.informerFor<T>(path);
    const byName = (n: V1Namespace): void => this.queue.add(n.metadata?.name ?? '');
    this.namespaces.addEventHandler({ add: byName, update: byName });
    const ours = (o: T): void => {
      if (o.metadata?.name === name) this.queue.add(o.metadata.namespace ?? '');
    };
    this.objects.addEventHandler({ update: ours, delete: ours });
    this.synced = Promise.all([this.namespaces.synced, this.objects.synced]).then(() => undefined);
  }

  start(): void {
    void this.synced.then(() => this.queue.run());
  }

  stop(): void {
    this.queue.stop();
  }

  /** Makes the namespace's object right, given what the informer has of it. */
  protected abstract ensure(namespace: string, current: T | undefined): Promise<void>;

  private async reconcile(namespace: string): Promise<void> {
    const ns = this.namespaces.get(namespace);
    if (ns === undefined || ns.status?.phase === 'Terminating' || ns.metadata?.deletionTimestamp !== undefined) return;
    try {
      await this.ensure(namespace, this.objects.get(this.name, namespace));
    } catch (e) {
      // Someone made or changed it meanwhile: the informer's event brings it back here.
      if ((e as { code?: number }).code !== 409) throw e;
    }
  }
}
