/**
 * The two controllers Kubernetes runs beside its API server that this one must have to keep its semantics:
 * the garbage collector (k8s.io/kubernetes pkg/controller/garbagecollector), which deletes objects whose
 * `ownerReferences` all point at deleted owners and carries out Foreground deletes (dependents first, then the
 * owner's `foregroundDeletion` finalizer is lifted), and the namespace controller (pkg/controller/namespace), which
 * empties a Namespace being deleted and then removes it. Both follow the store's own event stream, so they see
 * every delete, however it was made, and resume correctly after a restart from a full scan.
 */
import type { Logger } from '../lib/log.js';
import { ApiError } from './api-error.js';
import { findKind, kindOfObject, servedKinds } from './kinds.js';
import type { KindInfo } from './kind-info.js';
import type { KubeObject } from './kube-object.js';
import { FOREGROUND_DELETION, type ResourceStore } from './resource-store.js';
import type { Storage, StorageEvent } from './storage.js';

const NAMESPACES = findKind('', 'v1', 'namespaces') as KindInfo;

/** Marked for deletion and held by the foregroundDeletion finalizer: its dependents go first. */
const deletingForeground = (o: KubeObject): boolean =>
  o.metadata.deletionTimestamp !== undefined && (o.metadata.finalizers ?? []).includes(FOREGROUND_DELETION);
const NAMESPACE_FINALIZER = 'kubernetes';
/** How soon a namespace whose content is still being finalized is looked at again. */
const NAMESPACE_RECHECK_MS = 1000;

interface Ref {
  readonly kind: KindInfo;
  readonly namespace: string | undefined;
  readonly name: string;
}

export class GarbageCollector {
  /** owner uid → dependents that name it. */
  private readonly dependents = new Map<string, Map<string, Ref>>();
  /** Objects that exist, by uid. */
  private readonly live = new Map<string, Ref>();
  private readonly work: (() => Promise<void>)[] = [];
  private running = false;
  private readonly timers = new Set<NodeJS.Timeout>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly storage: Storage,
    private readonly store: ResourceStore,
    private readonly log: Logger,
  ) {}

  /** Indexes the store, collects what a crash left behind, then follows every change. */
  start(): void {
    const { items, revision } = this.storage.list('/registry/');
    for (const o of items) this.index(o);
    for (const o of items) {
      if (this.orphaned(o)) this.enqueueDelete(o);
      if (deletingForeground(o)) this.enqueueForeground(o);
      if (kindOfObject(o.apiVersion, o.kind) === NAMESPACES && o.metadata.deletionTimestamp !== undefined)
        this.enqueueNamespace(o.metadata.name ?? '');
    }
    this.unsubscribe = this.storage.watch('/registry/', revision, (e) => this.onEvent(e));
  }

  stop(): void {
    this.unsubscribe?.();
    this.work.length = 0;
    for (const t of this.timers) clearTimeout(t);
  }

  /** Strips the owner reference to `ownerUid` from each dependent (propagationPolicy Orphan). */
  async orphan(ownerUid: string): Promise<void> {
    const deps = [...(this.dependents.get(ownerUid)?.values() ?? [])];
    for (const d of deps) {
      await this.store
        .mutate(d.kind, d.namespace, d.name, (o) => {
          o.metadata.ownerReferences = (o.metadata.ownerReferences ?? []).filter((r) => r.uid !== ownerUid);
          if (o.metadata.ownerReferences.length === 0) delete o.metadata.ownerReferences;
        })
        .catch((e: unknown) => this.ignoreGone(e));
    }
  }

  private onEvent(e: StorageEvent): void {
    if (e.prevObject !== undefined) this.unindex(e.prevObject);
    if (e.type === 'DELETED') {
      const uid = e.object.metadata.uid;
      this.unindex(e.object);
      if (uid !== undefined) for (const d of this.dependents.get(uid)?.values() ?? []) this.enqueueCheck(d);
      // An owner deleting in the foreground may have been waiting for this one.
      for (const r of e.object.metadata.ownerReferences ?? []) {
        const owner = this.live.get(r.uid);
        if (owner !== undefined) this.enqueueForegroundRef(owner, r.uid);
      }
      return;
    }
    this.index(e.object);
    if (this.orphaned(e.object)) this.enqueueDelete(e.object);
    if (deletingForeground(e.object)) this.enqueueForeground(e.object);
    if (
      kindOfObject(e.object.apiVersion, e.object.kind) === NAMESPACES &&
      e.object.metadata.deletionTimestamp !== undefined
    )
      this.enqueueNamespace(e.object.metadata.name ?? '');
  }

  private index(o: KubeObject): void {
    const uid = o.metadata.uid;
    const ref = this.refOf(o);
    if (ref === undefined) return;
    if (uid !== undefined) this.live.set(uid, ref);
    for (const r of o.metadata.ownerReferences ?? []) {
      const m = this.dependents.get(r.uid) ?? new Map<string, Ref>();
      m.set(uid ?? '', ref);
      this.dependents.set(r.uid, m);
    }
  }

  private unindex(o: KubeObject): void {
    const uid = o.metadata.uid ?? '';
    this.live.delete(uid);
    for (const r of o.metadata.ownerReferences ?? []) {
      const m = this.dependents.get(r.uid);
      m?.delete(uid);
      if (m?.size === 0) this.dependents.delete(r.uid);
    }
  }

  private refOf(o: KubeObject): Ref | undefined {
    const kind = kindOfObject(o.apiVersion, o.kind);
    return kind === undefined
      ? undefined
      : { kind, namespace: kind.namespaced ? o.metadata.namespace : undefined, name: o.metadata.name ?? '' };
  }

  /**
   * An object is garbage when it has owners and none of them exists any more. An owner of a kind this server
   * does not serve (a DaemonSet) cannot be looked up, so it is never taken as gone, as the garbage collector
   * treats an owner whose kind it cannot resolve.
   */
  private orphaned(o: KubeObject): boolean {
    const owners = o.metadata.ownerReferences ?? [];
    return (
      owners.length > 0 &&
      owners.every((r) => kindOfObject(r.apiVersion, r.kind) !== undefined && !this.live.has(r.uid))
    );
  }

  private enqueueCheck(d: Ref): void {
    this.enqueue(async () => {
      const o = this.store.find(d.kind, d.namespace, d.name);
      if (o !== undefined && this.orphaned(o)) await this.deleteQuietly(d.kind, o);
    });
  }

  private enqueueForeground(o: KubeObject): void {
    const ref = this.refOf(o);
    if (ref !== undefined && o.metadata.uid !== undefined) this.enqueueForegroundRef(ref, o.metadata.uid);
  }

  /**
   * One step of a Foreground delete: dependents not yet deleting are deleted in the foreground too; once none
   * that blocks its owner (`blockOwnerDeletion`) is left, the owner's finalizer is lifted, which removes it.
   */
  private enqueueForegroundRef(ref: Ref, uid: string): void {
    this.enqueue(async () => {
      const owner = this.store.find(ref.kind, ref.namespace, ref.name);
      if (owner?.metadata.uid !== uid || !deletingForeground(owner)) return;
      let blocking = 0;
      for (const d of [...(this.dependents.get(uid)?.values() ?? [])]) {
        const dep = this.store.find(d.kind, d.namespace, d.name);
        if (dep === undefined) continue;
        if (dep.metadata.deletionTimestamp === undefined) {
          await this.store
            .delete(d.kind, d.namespace, d.name, {
              propagationPolicy: 'Foreground',
              preconditions: { uid: dep.metadata.uid },
            })
            .catch((e: unknown) => this.ignoreGone(e));
        }
        const stillThere = this.store.find(d.kind, d.namespace, d.name) !== undefined;
        if (
          stillThere &&
          dep.metadata.ownerReferences?.some((r) => r.uid === uid && r.blockOwnerDeletion === true) === true
        )
          blocking++;
      }
      if (blocking > 0) return;
      await this.store
        .mutate(ref.kind, ref.namespace, ref.name, (o) => {
          o.metadata.finalizers = (o.metadata.finalizers ?? []).filter((f) => f !== FOREGROUND_DELETION);
        })
        .catch((e: unknown) => this.ignoreGone(e));
    });
  }

  private enqueueDelete(o: KubeObject): void {
    const ref = this.refOf(o);
    if (ref === undefined) return;
    this.enqueueCheck(ref);
  }

  /**
   * Deletes everything in the namespace, and lifts its `kubernetes` finalizer only once a fresh look finds it
   * empty; content that is still there (held by its own finalizers) is looked at again later.
   */
  private enqueueNamespace(name: string): void {
    this.enqueue(async () => {
      let remaining = 0;
      for (const k of servedKinds()) {
        if (!k.namespaced || k.review || k.storageVersion !== undefined) continue; // each stored kind once
        for (const o of this.store.list(k, name).items) {
          if (o.metadata.deletionTimestamp === undefined) await this.deleteQuietly(k, o);
        }
        remaining += this.store.list(k, name).items.length;
      }
      if (this.store.find(NAMESPACES, undefined, name) === undefined) return;
      if (remaining > 0) {
        this.log.info({ namespace: name, remaining }, 'namespace still has content; looking again');
        const t = setTimeout(() => {
          this.timers.delete(t);
          this.enqueueNamespace(name);
        }, NAMESPACE_RECHECK_MS);
        t.unref();
        this.timers.add(t);
        return;
      }
      await this.store
        .mutate(
          NAMESPACES,
          undefined,
          name,
          (o) => {
            const spec = (o.spec ?? {}) as { finalizers?: string[] };
            spec.finalizers = (spec.finalizers ?? []).filter((f) => f !== NAMESPACE_FINALIZER);
            o.spec = spec;
          },
          'finalize',
        )
        .catch((e: unknown) => this.ignoreGone(e));
    });
  }

  private async deleteQuietly(k: KindInfo, o: KubeObject): Promise<void> {
    await this.store
      .delete(k, o.metadata.namespace, o.metadata.name ?? '', { preconditions: { uid: o.metadata.uid } })
      .catch((e: unknown) => this.ignoreGone(e));
  }

  private ignoreGone(e: unknown): void {
    if (e instanceof ApiError && (e.reason === 'NotFound' || e.reason === 'Conflict')) return;
    this.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'garbage collection step failed');
  }

  private enqueue(step: () => Promise<void>): void {
    this.work.push(step);
    if (this.running) return;
    this.running = true;
    void (async () => {
      for (let s = this.work.shift(); s !== undefined; s = this.work.shift())
        await s().catch((e: unknown) => this.ignoreGone(e));
      this.running = false;
    })();
  }
}
