import { EventEmitter } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { describeError } from '../../lib/errors.js';
import { PodIndex, type PodFacts } from './pod-index.js';
import {
  loadManifestDir,
  objectKey,
  type Manifest,
  type ManifestLoad,
  type ParsedFiles,
  type RejectedObject,
} from './manifest-dir.js';

/** Comparing a reload with what was held yields to the event loop after this long. */
const DIFF_SLICE_MS = 10;
/** Wait this long after the last file event before reloading: editors and atomic writers change files in bursts. */
const RELOAD_DEBOUNCE_MS = 50;

/**
 * What stands in for a policy whose document was refused and that has no last good version: it cannot be
 * honoured and its selector cannot be trusted, so it denies every workload of its namespace (of the mesh, in
 * the root namespace: an AuthorizationPolicy without a selector there is GLOBAL). A refused PeerAuthentication
 * stands in as STRICT for its namespace. Fail closed: a policy we cannot read never opens anything.
 */
function failClosedStandIn(r: RejectedObject, file: string): Manifest | undefined {
  const spec =
    r.kind === 'AuthorizationPolicy'
      ? { action: 'DENY', rules: [{}] }
      : r.kind === 'PeerAuthentication'
        ? { mtls: { mode: 'STRICT' } }
        : undefined;
  if (spec === undefined) return undefined;
  return {
    apiVersion: 'security.istio.io/v1',
    kind: r.kind,
    metadata: { name: r.name, namespace: r.namespace, labels: {}, annotations: {} },
    spec,
    status: {},
    source: r.source,
    file,
  };
}

/** Every IP a workload-like object claims, for the duplicate-IP warning. */
function claimedIps(o: Manifest): string[] {
  if (o.kind === 'Pod') {
    const list = Array.isArray(o.status['podIPs']) ? o.status['podIPs'].map((x) => (x as { ip?: unknown }).ip) : [];
    return [...new Set([o.status['podIP'], ...list].filter((x): x is string => typeof x === 'string' && x !== ''))];
  }
  if (o.kind === 'WorkloadEntry' && typeof o.spec['address'] === 'string') return [o.spec['address']];
  return [];
}

/** True when `b` says what `a` says, from the same place (an unchanged file's objects are the same objects). */
function sameManifest(a: Manifest | undefined, b: Manifest): boolean {
  if (a === b) return true;
  if (a === undefined || a.source !== b.source) return false;
  return JSON.stringify(a.document ?? [a.metadata, a.spec]) === JSON.stringify(b.document ?? [b.metadata, b.spec]);
}

/** What changed in one batch: each object's key with its new version, or undefined when it left. */
export type RegistryChanges = ReadonlyMap<string, Manifest | undefined>;

/**
 * istiod's service registry, fed either by a manifest directory (`reload`, `watch`) or by a watched source that
 * sets objects one at a time (`upsert`, `remove`, `refuse`: the Kubernetes API informers). It keeps the last good
 * version of every object: a document that turns invalid, a half-written file or a directory that briefly
 * disappears never removes what was served; the problem is logged instead. From a directory, objects leave only
 * when their file holds no problem and no longer defines them (or the file is deleted); from the API, when the
 * API deletes them.
 *
 * `change` carries the objects that changed: batched per turn of the event loop from a watched source; after each
 * directory reload, even when nothing changed.
 */
export class Registry extends EventEmitter<{ change: [changes: RegistryChanges] }> {
  private objects = new Map<string, Manifest>();
  private list: readonly Manifest[] | undefined;
  private readonly podIndex = new PodIndex();
  /** Keys of stand-ins set by `refuse`: a later refusal still has no good version to keep. */
  private readonly standIns = new Set<string>();
  /** Changes from a watched source not yet emitted. */
  private pending = new Map<string, Manifest | undefined>();
  private flushing: NodeJS.Immediate | undefined;
  /** The last good objects of each file. */
  private byFile = new Map<string, readonly Manifest[]>();
  /** What the last reload parsed, per file. */
  private parsed: ParsedFiles = new Map();
  private dirWatcher: FSWatcher | undefined;
  private parentWatcher: FSWatcher | undefined;
  /** Set when the directory itself was removed, renamed or created: its watcher must be made anew. */
  private rewatch = false;
  private timer: NodeJS.Timeout | undefined;
  private reloading = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly dir: string | undefined,
    private readonly log: Logger,
  ) {
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
   * A watched object whose new version was refused: it keeps its last good version, or stands in fail-closed
   * (an AuthorizationPolicy denies its namespace, a PeerAuthentication is STRICT) when it has none.
   */
  refuse(r: RejectedObject): void {
    if (this.objects.has(r.key) && !this.standIns.has(r.key)) {
      this.log.warn({ object: r.key, source: r.source }, 'serving the last good version');
      return;
    }
    const standIn = failClosedStandIn(r, '');
    if (standIn === undefined) return;
    this.warnStandIn(r);
    this.set(r.key, standIn);
    this.standIns.add(r.key);
  }

  /** Removes the object at `key` if it is a fail-closed stand-in (its source no longer names it). */
  dropStandIn(key: string): void {
    if (this.standIns.has(key)) this.set(key, undefined);
  }

  private warnStandIn(r: RejectedObject): void {
    this.log.warn(
      `${r.source}: ${r.key} has no good version; it stands in as ${r.kind === 'PeerAuthentication' ? 'STRICT' : 'deny-all'} for its namespace until fixed`,
    );
  }

  private set(key: string, o: Manifest | undefined): void {
    this.standIns.delete(key);
    this.podIndex.remove(this.objects.get(key));
    if (o === undefined) this.objects.delete(key);
    else this.objects.set(key, o);
    this.podIndex.add(o);
    this.list = undefined;
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

  /**
   * Reads the directory again (parsing only the files whose text changed) and emits what changed, object by
   * object.
   */
  async reload(): Promise<void> {
    if (this.dir === undefined) return;
    let load: Awaited<ReturnType<typeof loadManifestDir>>;
    try {
      load = await loadManifestDir(this.dir, this.parsed);
    } catch (e) {
      this.log.error(
        { dir: this.dir, error: describeError(e) },
        'cannot read the config directory; serving the last good state',
      );
      return;
    }
    this.parsed = load.parsed;
    for (const e of load.errors)
      this.log.error({ error: e.message }, 'refused an invalid manifest; its object keeps its last good version');
    for (const w of load.warnings) this.log.warn(w);
    const merged = this.merge(load);
    const before = this.objects;
    this.objects = new Map(merged.map((o) => [objectKey(o), o]));
    this.list = merged;
    this.podIndex.replace(merged);
    const changes = new Map<string, Manifest | undefined>();
    let sliceStart = performance.now();
    for (const [key, o] of this.objects) {
      if (!sameManifest(before.get(key), o)) changes.set(key, o);
      // Comparing a large directory object by object takes a while: let the CA and xDS in meanwhile.
      if (performance.now() - sliceStart < DIFF_SLICE_MS) continue;
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
    for (const key of before.keys()) if (!this.objects.has(key)) changes.set(key, undefined);
    this.log.info({ objects: merged.length, changed: changes.size }, 'manifests loaded');
    this.emit('change', changes);
  }

  private merge(load: ManifestLoad): Manifest[] {
    const fresh = new Map<string, Manifest[]>();
    for (const o of load.objects) {
      const list = fresh.get(o.file);
      if (list === undefined) fresh.set(o.file, [o]);
      else list.push(o);
    }
    const damaged = new Set(load.damaged);
    const byFile = new Map<string, readonly Manifest[]>();
    for (const file of new Set([...fresh.keys(), ...damaged])) {
      const now = fresh.get(file) ?? [];
      if (!damaged.has(file)) {
        byFile.set(file, now);
        continue;
      }
      const present = new Set(now.map(objectKey));
      const kept = (this.byFile.get(file) ?? []).filter((o) => !present.has(objectKey(o)));
      for (const o of kept) this.log.warn({ object: objectKey(o), source: o.source }, 'serving the last good version');
      byFile.set(file, [...now, ...kept]);
    }
    this.byFile = byFile;

    const out: Manifest[] = [];
    const first = new Map<string, Manifest>();
    const ips = new Map<string, Manifest>();
    for (const file of [...byFile.keys()].sort()) {
      for (const o of byFile.get(file)!) {
        const key = objectKey(o);
        const prev = first.get(key);
        if (prev !== undefined) {
          this.log.warn(`${o.source}: ${key} is also defined at ${prev.source}; this one is ignored`);
          continue;
        }
        first.set(key, o);
        for (const ip of claimedIps(o)) {
          const other = ips.get(ip);
          if (other !== undefined)
            this.log.warn(
              `${o.source}: ${key} claims IP ${ip}, already claimed by ${objectKey(other)} at ${other.source}`,
            );
          else ips.set(ip, o);
        }
        out.push(o);
      }
    }
    for (const r of load.rejected) {
      if (first.has(r.key)) continue;
      const standIn = failClosedStandIn(r, r.source.slice(0, r.source.lastIndexOf(':')));
      if (standIn === undefined) continue;
      this.warnStandIn(r);
      first.set(r.key, standIn);
      out.push(standIn);
    }
    return out;
  }

  /** The object at `key` (`Kind/namespace/name`), if the registry holds it. */
  get(key: string): Manifest | undefined {
    return this.objects.get(key);
  }

  /** Every object currently in the registry. */
  all(): readonly Manifest[] {
    this.list ??= [...this.objects.values()];
    return this.list;
  }

  /**
   * Reloads on any change in the directory (debounced). The parent directory is watched too, so a directory
   * that is deleted and re-created (or renamed into place) is watched again; a ConfigMap mount's `..data`
   * symlink swap is a change in the directory itself.
   */
  watch(): void {
    if (this.dir === undefined) return;
    const dir = this.dir;
    const base = path.basename(path.resolve(dir));
    this.parentWatcher = watch(path.dirname(path.resolve(dir)), (_ev, name) => {
      if (name !== null && name !== base) return;
      this.rewatch = true;
      this.schedule();
    });
    this.parentWatcher.unref();
    this.watchDir();
  }

  private watchDir(): void {
    if (this.dir === undefined || this.stopped) return;
    this.dirWatcher?.close();
    this.dirWatcher = undefined;
    try {
      this.dirWatcher = watch(this.dir, () => this.schedule());
      this.dirWatcher.on('error', () => this.schedule());
      this.dirWatcher.unref();
    } catch (e) {
      this.log.error(
        { dir: this.dir, error: describeError(e) },
        'cannot watch the config directory; waiting for it to appear',
      );
    }
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.reloading = this.reloading
        .then(() => this.rewatchAndReload())
        .catch((e: unknown) => this.log.error({ error: describeError(e) }, 'manifest reload failed'));
    }, RELOAD_DEBOUNCE_MS);
  }

  private async rewatchAndReload(): Promise<void> {
    if (this.dir === undefined || this.stopped) return;
    if (this.rewatch) {
      this.rewatch = false;
      this.watchDir();
    }
    await this.reload();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearImmediate(this.flushing);
    this.dirWatcher?.close();
    this.parentWatcher?.close();
  }

  pods(): PodFacts[] {
    return this.podIndex.all();
  }

  /** True when `namespace/serviceAccount` has a pod on `node` that has not failed (impersonation rule). */
  hasPodOnNode(namespace: string, serviceAccount: string, node: string): boolean {
    return this.podIndex.hasPodOnNode(namespace, serviceAccount, node);
  }

  nodeOfPod(namespace: string, name: string): string | undefined {
    return this.podIndex.nodeOfPod(namespace, name);
  }
}
