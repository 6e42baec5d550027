/**
 * istiod's config store (istio `pilot/pkg/model` ConfigStore, with the service registry's pods and services in the
 * same place): every object the model and the CA read, set one at a time by a watched source (`upsert`, `remove`:
 * the Kubernetes API informers) and by whoever learns that a policy was refused (`refuse`: the informers for an
 * object that fails its schema, `DirectoryApplier` for a policy the API refused). A refused object keeps its last
 * good version, or, having none, a fail-closed stand-in serves in its place until its source delivers a good one
 * or no longer names it.
 *
 * `change` carries the objects that changed, batched per turn of the event loop. `pod-index.ts` answers the CA's
 * pod lookups without a scan.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from '../../lib/log.js';
import { failClosedStandIn, warnStandIn } from './fail-closed-stand-in.js';
import { objectKey, type Manifest, type ObjectChanges, type RejectedObject } from './manifest-dir.js';
import { PodIndex } from './pod-index.js';

export class ConfigStore extends EventEmitter<{ change: [changes: ObjectChanges] }> {
  private readonly objects = new Map<string, Manifest>();
  private readonly podIndex = new PodIndex();
  /** Keys of stand-ins set by `refuse`: a later refusal still has no good version to keep. */
  private readonly standIns = new Set<string>();
  /** Changes not yet emitted. */
  private pending = new Map<string, Manifest | undefined>();
  private flushing: NodeJS.Immediate | undefined;

  constructor(private readonly log: Logger) {
    super();
  }

  /** Adds or replaces one object from a watched source. */
  upsert(o: Manifest): void {
    this.set(objectKey(o), o);
  }

  /** An object the watched source deleted. */
  remove(key: string): void {
    if (this.objects.has(key)) this.set(key, undefined);
  }

  /**
   * An object whose new version was refused: it keeps its last good version, or stands in fail-closed (an
   * AuthorizationPolicy denies its namespace, a PeerAuthentication is STRICT) when it has none.
   */
  refuse(r: RejectedObject): void {
    if (this.objects.has(r.key) && !this.standIns.has(r.key)) {
      this.log.warn({ object: r.key, source: r.source }, 'serving the last good version');
      return;
    }
    const standIn = failClosedStandIn(r, '');
    if (standIn === undefined) return;
    warnStandIn(this.log, r);
    this.set(r.key, standIn);
    this.standIns.add(r.key);
  }

  /** Removes the object at `key` if it is a fail-closed stand-in (its source no longer names it). */
  dropStandIn(key: string): void {
    if (this.standIns.has(key)) this.set(key, undefined);
  }

  private set(key: string, o: Manifest | undefined): void {
    this.standIns.delete(key);
    this.podIndex.remove(this.objects.get(key));
    if (o === undefined) this.objects.delete(key);
    else this.objects.set(key, o);
    this.podIndex.add(o);
    this.pending.set(key, o);
    this.flushing ??= setImmediate(() => this.flush());
  }

  /** Emits the changes set so far now, rather than at the end of this turn of the event loop. */
  flush(): void {
    clearImmediate(this.flushing);
    this.flushing = undefined;
    if (this.pending.size === 0) return;
    const changes = this.pending;
    this.pending = new Map();
    this.emit('change', changes);
  }

  stop(): void {
    clearImmediate(this.flushing);
  }

  /** True when `namespace/serviceAccount` has a pod on `node` that has not failed (impersonation rule). */
  hasPodOnNode(namespace: string, serviceAccount: string, node: string): boolean {
    return this.podIndex.hasPodOnNode(namespace, serviceAccount, node);
  }

  nodeOfPod(namespace: string, name: string): string | undefined {
    return this.podIndex.nodeOfPod(namespace, name);
  }
}
