import { mkdirSync } from 'node:fs';
import { open, type Database, type RootDatabase } from 'lmdb';
import { ApiError } from './api-error.js';
import type { KubeObject } from './kube-object.js';
import { WatchCache, deepFreeze, type StorageEvent, type StorageListener } from './watch-cache.js';
import { isRecord } from '../lib/record.js';

export type { StorageEvent, StorageListener } from './watch-cache.js';

/**
 * The embedded API server's store: etcd's role in Kubernetes, on lmdb. It follows k8s.io/apiserver
 * pkg/storage/interfaces.go (the operations and their errors) and pkg/storage/etcd3/store.go (revisions,
 * conditional writes, no-op updates, delete returning the last state at the deletion's revision).
 *
 * Layout (one lmdb environment, three named databases):
 * - `objects`: key → the object's JSON, `metadata.resourceVersion` included, in key (byte) order as etcd's.
 * - `history`: revision → the JSON of that revision's event; the newest `historyLimit` are kept, so a watch can
 *   resume across a restart. Older revisions are compacted as etcd compacts: a watch from before the compacted
 *   revision gets `410 Expired`. Compaction is continuous (each write drops the revision `historyLimit` behind it)
 *   where the real API server compacts etcd every five minutes; the effect on clients is the same.
 * - `meta`: `revision` (the global counter, one per write, never reused) and `compacted`.
 * A write runs as one lmdb child transaction that reads the current state, checks its condition, takes the next
 * revision and writes the object, its history event, the compaction and the counter together; a write that fails
 * aborts its child transaction alone. Child transactions queued in the same event turn share one lmdb
 * transaction, so concurrent writers are batched into one commit and one fsync, and each still gets its own
 * revision.
 *
 * Durability: the environment is opened with `overlappingSync: false`, `noSync: false`, `noMetaSync: false` and
 * `useWritemap: false` (and never `mapAsync`), so lmdb's commit writes the data pages, fdatasyncs them, writes the
 * meta page and syncs it before the commit is reported; a write's promise resolves only after that commit.
 * lmdb-js's default on Linux, `overlappingSync`, reports a commit before its flush, which is why it is off.
 * Objects are stored as JSON text rather than lmdb's default msgpack so that what is stored is exactly what the
 * API serves: a value JSON cannot carry (a cycle, a BigInt) is refused before it reaches a transaction.
 *
 * Watches are served by the in-memory {@link WatchCache}; events are handed to it in revision order once their
 * commit is reported, and replays older than its ring come from `history`.
 */

/**
 * Default number of revisions kept in `history`: enough to replay a full 10,000-object rollout (the scale the
 * API server is sized for) to an informer that was disconnected during it, at a few tens of MB on disk.
 */
export const DEFAULT_HISTORY_LIMIT = 10_000;

/**
 * Events kept in memory for fast replays. The real watch cache starts at 100 events and grows while events
 * younger than 75 s would be evicted; a fixed 1,024 covers the reconnects after a burst, and anything older
 * is still replayed, from lmdb.
 */
const WATCH_CACHE_CAPACITY = 1024;

/** etcd's default request limit (`--max-request-bytes`, 1.5 MiB): no stored object is larger. */
const MAX_OBJECT_BYTES = 1.5 * 1024 * 1024;

/** lmdb's key size limit for its default 4 KiB pages (lmdb-js caps keys at 1,978 bytes). */
const MAX_KEY_BYTES = 1978;

const CONFLICT_MODIFIED = 'the object has been modified; please apply your changes to the latest version and try again';

type Decision =
  | { error: ApiError }
  | { unchanged: KubeObject }
  | { type: 'ADDED' | 'MODIFIED'; next: KubeObject }
  | { type: 'DELETED' };

/**
 * What a write decides, inside its transaction, from the current state of its key (undefined if absent) and
 * the validated copy of the object it writes (`next`, undefined for a delete).
 */
type Decide = (
  current: KubeObject | undefined,
  currentJson: string | undefined,
  next: KubeObject | undefined,
) => Decision;

/** One write as it goes through its transaction. */
interface WriteSlot {
  /** Set when the write was refused: nothing was written. */
  error?: ApiError;
  /** What the caller gets: its own copy of the stored object (for a delete, the last state). */
  result?: KubeObject;
  /** The event to hand to watchers once committed; unset when nothing was written. */
  pending?: PendingEvent;
}

interface PendingEvent {
  readonly eventJson: string;
  readonly revision: number;
  state: 'written' | 'committed' | 'failed';
}

/** Where a key is in the `/registry/<group>/<resource>/[<namespace>/]<name>` layout, for error messages. */
function describeKey(key: string): { qualifiedResource: string; group: string; resource: string; name: string } {
  const parts = key.split('/');
  if (parts.length >= 5 && parts[1] === 'registry') {
    const group = parts[2] === 'core' ? '' : parts[2]!;
    const resource = parts[3]!;
    return {
      qualifiedResource: group === '' ? resource : `${resource}.${group}`,
      group,
      resource,
      name: parts[parts.length - 1]!,
    };
  }
  return { qualifiedResource: 'objects', group: '', resource: 'objects', name: key };
}

function notFound(key: string): ApiError {
  const d = describeKey(key);
  return new ApiError('NotFound', `${d.qualifiedResource} "${d.name}" not found`, {
    name: d.name,
    group: d.group,
    kind: d.resource,
  });
}

function conflict(key: string, why: string): ApiError {
  const d = describeKey(key);
  return new ApiError('Conflict', `Operation cannot be fulfilled on ${d.qualifiedResource} "${d.name}": ${why}`, {
    name: d.name,
    group: d.group,
    kind: d.resource,
  });
}

/** A failed delete precondition, worded as etcd3 store's storage.NewInvalidObjError is served. */
function preconditionFailed(key: string, what: string, wanted: string, actual: string | undefined): ApiError {
  return conflict(
    key,
    `StorageError: invalid object, Code: 4, Key: ${key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ${what} in precondition: ${wanted}, ${what} in object meta: ${actual ?? ''}`,
  );
}

function expired(from: number, compacted: number): ApiError {
  return new ApiError('Expired', `too old resource version: ${from} (${compacted})`);
}

function badRequest(message: string): ApiError {
  return new ApiError('BadRequest', message);
}

// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u001f]/;

function checkKey(key: unknown): asserts key is string {
  if (
    typeof key !== 'string' ||
    !key.startsWith('/') ||
    CONTROL_CHARACTER.test(key) ||
    Buffer.byteLength(key) > MAX_KEY_BYTES
  ) {
    throw badRequest(
      `invalid storage key ${JSON.stringify(key)}: it must start with "/", hold no control characters and be at most ${MAX_KEY_BYTES} bytes`,
    );
  }
}

function checkPrefix(prefix: unknown): asserts prefix is string {
  if (prefix !== '') checkKey(prefix);
}

/** A private copy of `obj` as it will be stored, or BadRequest when it cannot be stored. */
function copyForStorage(obj: unknown): KubeObject {
  if (!isRecord(obj) || !isRecord(obj.metadata))
    throw badRequest('an object to store must be a JSON object with a metadata object');
  let json: string;
  try {
    json = JSON.stringify(obj);
  } catch (err) {
    throw badRequest(`the object cannot be stored as JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (json.length > MAX_OBJECT_BYTES)
    throw new ApiError('RequestEntityTooLarge', `the object is ${json.length} bytes; the limit is ${MAX_OBJECT_BYTES}`);
  return JSON.parse(json) as KubeObject;
}

/** JSON of `obj` with `resourceVersion` set last in its metadata, so equal objects serialise equally. */
function serialize(obj: KubeObject, revision: string): string {
  delete obj.metadata.resourceVersion;
  obj.metadata.resourceVersion = revision;
  return JSON.stringify(obj);
}

/** Where an event's key starts in its stored JSON (`{"type":"…","key":"…`, as the write builds it). */
const KEY_FIELD = ',"key":"';

/** Whether a stored event's key starts with `prefix`; keys are plain path segments, never escaped in JSON. */
function eventKeyHasPrefix(json: string, prefix: string): boolean {
  const at = json.indexOf(KEY_FIELD);
  return at >= 0 && json.startsWith(prefix, at + KEY_FIELD.length);
}

function parseEvent(json: string): StorageEvent {
  return deepFreeze(JSON.parse(json) as StorageEvent);
}

export class Storage {
  private closed = false;
  /** Committed events not yet handed to the watch cache, in the order their transactions ran. */
  private readonly pending: PendingEvent[] = [];
  private readonly inflight = new Set<Promise<unknown>>();

  private constructor(
    private readonly env: RootDatabase,
    private readonly objects: Database<string, string>,
    private readonly history: Database<string, number>,
    private readonly meta: Database<number, string>,
    private readonly cache: WatchCache,
    private readonly historyLimit: number,
  ) {}

  /** Opens (creating if needed) the store in `dir`. `historyLimit`: revisions of history kept for watches. */
  static async open(dir: string, options: { historyLimit?: number } = {}): Promise<Storage> {
    const historyLimit = options.historyLimit ?? DEFAULT_HISTORY_LIMIT;
    if (!Number.isSafeInteger(historyLimit) || historyLimit < 1)
      throw new RangeError(`historyLimit must be a positive integer, got ${historyLimit}`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const env = open({
      path: dir,
      noSubdir: false,
      maxDbs: 3,
      overlappingSync: false,
      noSync: false,
      noMetaSync: false,
      useWritemap: false,
    });
    try {
      const objects = env.openDB<string, string>({ name: 'objects', encoding: 'string' });
      const history = env.openDB<string, number>({ name: 'history', encoding: 'string' });
      const meta = env.openDB<number, string>({ name: 'meta', encoding: 'msgpack' });
      const revision = meta.get('revision') ?? 0;
      const compacted = meta.get('compacted') ?? 0;
      if (revision - compacted > historyLimit) {
        // A smaller limit than the store was last opened with: compact down to it before serving.
        const to = revision - historyLimit;
        await env.transaction(() => {
          for (const key of history.getKeys({ end: to, inclusiveEnd: true })) history.removeSync(key);
          meta.putSync('compacted', to);
        });
      }
      const cache = new WatchCache(Math.min(historyLimit, WATCH_CACHE_CAPACITY), revision);
      return new Storage(env, objects, history, meta, cache, historyLimit);
    } catch (err) {
      await env.close();
      throw err;
    }
  }

  /**
   * The store's revision as watchers know it: every write up to it is committed and its event has been
   * handed to the watch cache. A bookmark may carry it.
   */
  revision(): number {
    return this.cache.lastRevision;
  }

  /** The object at `key`, or undefined. The caller owns the returned copy. */
  get(key: string): KubeObject | undefined {
    this.checkOpen();
    checkKey(key);
    const json = this.objects.get(key);
    return json === undefined ? undefined : (JSON.parse(json) as KubeObject);
  }

  /** Every object whose key starts with `prefix`, in key order, and the revision of that snapshot. */
  list(prefix: string): { items: KubeObject[]; revision: number } {
    this.checkOpen();
    checkPrefix(prefix);
    const txn = this.env.useReadTransaction();
    try {
      const revision = this.meta.get('revision', { transaction: txn }) ?? 0;
      const items: KubeObject[] = [];
      for (const { key, value } of this.objects.getRange({
        start: prefix === '' ? undefined : prefix,
        transaction: txn,
      })) {
        if (!key.startsWith(prefix)) break;
        items.push(JSON.parse(value) as KubeObject);
      }
      return { items, revision };
    } finally {
      txn.done();
    }
  }

  /** Stores a new object at `key`; `409 AlreadyExists` if there is one. Any resourceVersion it carries is replaced. */
  create(key: string, obj: KubeObject): Promise<KubeObject> {
    return this.write(key, obj, (current, _json, next) => {
      if (current !== undefined) {
        const d = describeKey(key);
        return {
          error: new ApiError('AlreadyExists', `${d.qualifiedResource} "${d.name}" already exists`, {
            name: d.name,
            group: d.group,
            kind: d.resource,
          }),
        };
      }
      return { type: 'ADDED', next: next! };
    });
  }

  /**
   * Replaces the object at `key`: `404 NotFound` if absent, `409 Conflict` if `expectedResourceVersion` is given
   * and is not the current one. An update that changes nothing writes nothing and returns the stored object,
   * as etcd3 store's GuaranteedUpdate does.
   */
  update(key: string, obj: KubeObject, expectedResourceVersion?: string): Promise<KubeObject> {
    return this.write(key, obj, (current, currentJson, next) => {
      if (current === undefined) return { error: notFound(key) };
      const currentRv = current.metadata.resourceVersion ?? '';
      if (expectedResourceVersion !== undefined && expectedResourceVersion !== currentRv)
        return { error: conflict(key, CONFLICT_MODIFIED) };
      if (serialize(next!, currentRv) === currentJson) return { unchanged: current };
      return { type: 'MODIFIED', next: next! };
    });
  }

  /**
   * Read-modify-write: `mutate` gets the current object (its own copy) and returns the new one, which is
   * written if the object has not changed since it was read; otherwise `mutate` runs again on the newer
   * object, as etcd3 store's GuaranteedUpdate retries. `404 NotFound` if absent; errors from `mutate` pass through.
   */
  async guaranteedUpdate(
    key: string,
    mutate: (current: KubeObject) => KubeObject | Promise<KubeObject>,
  ): Promise<KubeObject> {
    for (;;) {
      const current = this.get(key);
      if (current === undefined) throw notFound(key);
      const rv = current.metadata.resourceVersion;
      const next = await mutate(current);
      try {
        return await this.update(key, next, rv);
      } catch (err) {
        if (err instanceof ApiError && err.reason === 'Conflict') continue;
        throw err;
      }
    }
  }

  /**
   * Deletes the object at `key` and returns its last state with the deletion's resourceVersion, as etcd3
   * store's Delete does. `404 NotFound` if absent, `409 Conflict` if a precondition does not hold.
   */
  delete(key: string, preconditions: { resourceVersion?: string; uid?: string } = {}): Promise<KubeObject> {
    return this.write(key, undefined, (current) => {
      if (current === undefined) return { error: notFound(key) };
      const { uid, resourceVersion } = preconditions;
      if (uid !== undefined && uid !== current.metadata.uid)
        return { error: preconditionFailed(key, 'UID', uid, current.metadata.uid) };
      if (resourceVersion !== undefined && resourceVersion !== current.metadata.resourceVersion) {
        return { error: preconditionFailed(key, 'ResourceVersion', resourceVersion, current.metadata.resourceVersion) };
      }
      return { type: 'DELETED' };
    });
  }

  /**
   * Watches keys under `prefix` from `fromRevision`: the listener gets every event with a revision above it,
   * in revision order, starting from a microtask after this returns. A watch set up in the same turn as a
   * {@link list} from that list's revision sees each later event exactly once.
   *
   * Throws `410 Expired` ("too old resource version: X (Y)", Y the compacted revision) when events after
   * `fromRevision` are no longer retained, and `504 Timeout` (ResourceVersionTooLarge, as the watch cache
   * answers after waiting) when `fromRevision` is beyond the store's revision. A listener that throws ends its
   * own watch; the error goes to `onError`. Returns the function that stops the watch.
   */
  watch(prefix: string, fromRevision: number, listener: StorageListener, onError?: (err: unknown) => void): () => void {
    this.checkOpen();
    checkPrefix(prefix);
    if (!Number.isSafeInteger(fromRevision) || fromRevision < 0)
      throw badRequest(`invalid resource version: ${String(fromRevision)}`);
    const cached = this.cache.since(fromRevision);
    if (cached !== undefined) {
      if (fromRevision > this.cache.lastRevision) this.checkNotTooLarge(fromRevision);
      return this.cache.watch(prefix, fromRevision, cached, listener, onError);
    }
    const replay = this.readHistory(prefix, fromRevision, this.cache.oldestRevision);
    replay.push(...this.cache.since(this.cache.oldestRevision - 1)!);
    return this.cache.watch(prefix, fromRevision, replay, listener, onError);
  }

  /** Waits for writes in flight, ends every watch and closes lmdb. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.inflight]);
    this.cache.stopAll();
    await this.env.close();
  }

  private checkOpen(): void {
    if (this.closed) throw new ApiError('ServiceUnavailable', 'the store is closed');
  }

  /** A watch from beyond the committed revision: the real watch cache waits 3 s, then answers this. */
  private checkNotTooLarge(fromRevision: number): void {
    const committed = this.meta.get('revision') ?? 0;
    if (fromRevision > committed) {
      throw new ApiError('Timeout', `Too large resource version: ${fromRevision}, current: ${committed}`, {
        causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
        retryAfterSeconds: 1,
      });
    }
  }

  /**
   * The persisted events under `prefix` with revisions in (from, to), oldest first; `410 Expired` if any is
   * compacted. Events of other keys are skipped on their key alone, without parsing them: a watch on one kind
   * resuming far back must not parse the whole store's history.
   */
  private readHistory(prefix: string, from: number, to: number): StorageEvent[] {
    const txn = this.env.useReadTransaction();
    try {
      const compacted = this.meta.get('compacted', { transaction: txn }) ?? 0;
      if (from < compacted) throw expired(from, compacted);
      const events: StorageEvent[] = [];
      let expect = from + 1;
      for (const { key, value } of this.history.getRange({ start: expect, end: to, transaction: txn })) {
        if (key !== expect) break;
        if (eventKeyHasPrefix(value, prefix)) events.push(parseEvent(value));
        expect++;
      }
      if (expect !== to) throw expired(from, Math.max(compacted, expect));
      return events;
    } finally {
      txn.done();
    }
  }

  /** Runs one conditional write (`obj` is copied and validated first) and hands its event to the watch cache. */
  private write(key: string, obj: KubeObject | undefined, decide: Decide): Promise<KubeObject> {
    let copy: KubeObject | undefined;
    try {
      this.checkOpen();
      checkKey(key);
      copy = obj === undefined ? undefined : copyForStorage(obj);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    const slot: WriteSlot = {};
    const done = this.env
      .childTransaction(() => this.apply(key, copy, decide, slot))
      .then(
        () => {
          if (slot.pending !== undefined) slot.pending.state = 'committed';
          this.dispatch();
          if (slot.error !== undefined) throw slot.error;
          return slot.result!;
        },
        (err: unknown) => {
          if (slot.pending !== undefined) slot.pending.state = 'failed';
          this.dispatch();
          throw new ApiError(
            'InternalError',
            `the store could not commit the write to ${key}: ${err instanceof Error ? err.message : String(err)}`,
          );
        },
      );
    this.inflight.add(done);
    void done.finally(() => this.inflight.delete(done)).catch(() => undefined);
    return done;
  }

  /** Inside the write transaction: decide, take the next revision, write object, event, compaction and counter. */
  private apply(key: string, next: KubeObject | undefined, decide: Decide, slot: WriteSlot): void {
    const currentJson = this.objects.get(key);
    const current = currentJson === undefined ? undefined : (JSON.parse(currentJson) as KubeObject);
    const d = decide(current, currentJson, next);
    if ('error' in d) {
      slot.error = d.error;
      return;
    }
    if ('unchanged' in d) {
      slot.result = d.unchanged;
      return;
    }
    const revision = (this.meta.get('revision') ?? 0) + 1;
    const rv = String(revision);
    let result: KubeObject;
    let objectJson: string;
    if (d.type === 'DELETED') {
      result = current!;
      objectJson = serialize(result, rv);
      this.objects.removeSync(key);
    } else {
      result = d.next;
      objectJson = serialize(result, rv);
      this.objects.putSync(key, objectJson);
    }
    const eventJson = `{"type":"${d.type}","key":${JSON.stringify(key)},"revision":${revision},"object":${objectJson}${currentJson === undefined ? '' : `,"prevObject":${currentJson}`}}`;
    this.history.putSync(revision, eventJson);
    const compactTo = revision - this.historyLimit;
    if (compactTo > 0) {
      this.history.removeSync(compactTo);
      this.meta.putSync('compacted', compactTo);
    }
    this.meta.putSync('revision', revision);
    slot.result = result;
    slot.pending = { eventJson, revision, state: 'written' };
    this.pending.push(slot.pending);
  }

  /** Hands committed events to the watch cache in transaction order, dropping those whose commit failed. */
  private dispatch(): void {
    while (this.pending.length > 0 && this.pending[0]!.state !== 'written') {
      const p = this.pending.shift()!;
      if (p.state === 'committed') this.cache.append(parseEvent(p.eventJson));
    }
  }
}
