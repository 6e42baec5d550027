/**
 * One informer per watched resource for all the controllers of a process, as kube-controller-manager hands every
 * controller the same `SharedInformerFactory` (k8s.io/client-go `informers/factory.go`): each resource is listed
 * and watched once, whichever controllers read it, and each controller adds its own event handlers.
 *
 * The controllers ask for their informers and add their handlers when they are made; `start` then starts every
 * informer asked for, and `stop` stops them, after the controllers' queues have stopped.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../lib/log.js';
import { RestartingInformer } from './informer.js';
import { listJson } from './list-json.js';

export class SharedInformerFactory {
  /** By list path, and field selector when there is one: objects a selector leaves out are another cache. */
  private readonly informers = new Map<string, RestartingInformer<KubernetesObject>>();

  constructor(
    private readonly kc: KubeConfig,
    private readonly log: Logger,
  ) {}

  /**
   * The informer of `path` (a list endpoint, e.g. `/api/v1/pods`), made on the first request for it. The caller
   * names the object type, as client-go's typed informers fix it per resource.
   */
  informerFor<T extends KubernetesObject>(path: string, fieldSelector?: string): RestartingInformer<T> {
    const key = fieldSelector === undefined ? path : `${path}?fieldSelector=${fieldSelector}`;
    let inf = this.informers.get(key);
    if (inf === undefined) {
      const listPath =
        fieldSelector === undefined ? path : `${path}?fieldSelector=${encodeURIComponent(fieldSelector)}`;
      inf = new RestartingInformer<KubernetesObject>(
        this.kc,
        path,
        () => listJson(this.kc, listPath),
        {},
        this.log,
        fieldSelector,
      );
      this.informers.set(key, inf);
    }
    return inf as unknown as RestartingInformer<T>;
  }

  /** Starts every informer asked for since the last start. */
  start(): void {
    for (const inf of this.informers.values()) inf.start();
  }

  async stop(): Promise<void> {
    await Promise.all([...this.informers.values()].map((inf) => inf.stop()));
  }
}
