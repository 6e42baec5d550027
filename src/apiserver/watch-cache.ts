import type { KubeObject } from './kube-object.js';

/**
 * The in-memory watch cache of the embedded API server, after k8s.io/apiserver pkg/storage/cacher/watch_cache.go
 * (the cyclic buffer of recent events and `getAllEventsSinceLocked`) and cacher.go's cacheWatcher (fan-out to
 * watchers). The ring keeps the newest events so that a watch resuming from a recent resourceVersion is served
 * from memory; {@link Storage} serves older ones from its persisted history. Revisions are contiguous (every
 * write is one revision), so an event's place in the ring is arithmetic, not a search.
 *
 * Objects in events are deep-frozen: one event object goes to every watcher, and none may change what the
 * others see. A listener that throws ends its own watch only (cacher.go likewise terminates a watcher it cannot
 * feed) and the error goes to that watch's `onError`.
 */
export interface StorageEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  key: string;
  revision: number;
  /** The object after the write; for DELETED, its last state with the deletion's resourceVersion. */
  object: KubeObject;
  /** The object before the write (MODIFIED and DELETED), with its own resourceVersion. */
  prevObject?: KubeObject;
}

export type StorageListener = (e: StorageEvent) => void;

interface Watcher {
  readonly prefix: string;
  readonly listener: StorageListener;
  readonly onError: ((err: unknown) => void) | undefined;
  /** The newest revision this watcher has been given (or will be, from its backlog). */
  seen: number;
  /** Events waiting for delivery: the replay, then live events that arrived before the replay was delivered. */
  backlog: StorageEvent[] | undefined;
  active: boolean;
}

/** Freezes `o` and everything it holds, in place. */
export function deepFreeze<T>(o: T): T {
  if (typeof o === 'object' && o !== null && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

export class WatchCache {
  private readonly ring: (StorageEvent | undefined)[];
  /** Index in `ring` of the oldest event. */
  private start = 0;
  private size = 0;
  private last: number;
  private readonly watchers = new Set<Watcher>();

  /** `lastRevision` is the store's revision when the cache starts: events after it are appended. */
  constructor(capacity: number, lastRevision: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`watch cache capacity must be a positive integer, got ${capacity}`);
    this.ring = new Array<StorageEvent | undefined>(capacity).fill(undefined);
    this.last = lastRevision;
  }

  /** The revision of the newest event appended: every event up to it has been handed to the watchers. */
  get lastRevision(): number {
    return this.last;
  }

  /** The revision of the oldest event the ring holds (`lastRevision + 1` when it holds none). */
  get oldestRevision(): number {
    return this.last - this.size + 1;
  }

  get watcherCount(): number {
    return this.watchers.size;
  }

  /** Adds the next event (its revision must be `lastRevision + 1`) and hands it to every watcher of its key. */
  append(e: StorageEvent): void {
    if (e.revision !== this.last + 1)
      throw new Error(`watch cache: event revision ${e.revision} does not follow ${this.last}`);
    const capacity = this.ring.length;
    if (this.size === capacity) {
      this.ring[this.start] = e;
      this.start = (this.start + 1) % capacity;
    } else {
      this.ring[(this.start + this.size) % capacity] = e;
      this.size++;
    }
    this.last = e.revision;
    for (const w of this.watchers) {
      if (!w.active || e.revision <= w.seen || !e.key.startsWith(w.prefix)) continue;
      w.seen = e.revision;
      if (w.backlog !== undefined) w.backlog.push(e);
      else this.deliver(w, e);
    }
  }

  /**
   * Every event with a revision above `from`, oldest first, or undefined when the ring no longer reaches back
   * to `from + 1` (the caller then reads the older part from persisted history).
   */
  since(from: number): StorageEvent[] | undefined {
    if (from >= this.last) return [];
    if (from < this.oldestRevision - 1) return undefined;
    const out: StorageEvent[] = [];
    const capacity = this.ring.length;
    for (let i = from + 1 - this.oldestRevision; i < this.size; i++) out.push(this.ring[(this.start + i) % capacity]!);
    return out;
  }

  /**
   * Registers a watcher of keys under `prefix`. `replay` holds the events after the watch's starting revision up
   * to {@link lastRevision}, oldest first; they are delivered (filtered by prefix) from a microtask, so never
   * before this returns, and live events follow them in order. Returns the function that stops the watch.
   */
  watch(
    prefix: string,
    from: number,
    replay: readonly StorageEvent[],
    listener: StorageListener,
    onError?: (err: unknown) => void,
  ): () => void {
    const backlog = replay.filter((e) => e.revision > from && e.key.startsWith(prefix));
    const w: Watcher = {
      prefix,
      listener,
      onError,
      seen: Math.max(from, this.last),
      backlog: backlog.length > 0 ? backlog : undefined,
      active: true,
    };
    this.watchers.add(w);
    if (w.backlog !== undefined) queueMicrotask(() => this.drain(w));
    return () => this.stop(w);
  }

  /** Ends every watch (the store is closing). */
  stopAll(): void {
    for (const w of this.watchers) this.stop(w);
  }

  private drain(w: Watcher): void {
    const backlog = w.backlog;
    if (backlog === undefined) return;
    for (let i = 0; i < backlog.length && w.active; i++) this.deliver(w, backlog[i]!);
    w.backlog = undefined;
  }

  private deliver(w: Watcher, e: StorageEvent): void {
    try {
      w.listener(e);
    } catch (err) {
      this.stop(w);
      try {
        w.onError?.(err);
      } catch {
        // The watch is already ended; an onError that throws too has nothing left to disturb.
      }
    }
  }

  private stop(w: Watcher): void {
    w.active = false;
    w.backlog = undefined;
    this.watchers.delete(w);
  }
}
