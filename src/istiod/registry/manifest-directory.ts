/**
 * A manifest directory as istiod and `amesh up` read it: every `*.yaml` / `*.yml` file (`manifest-dir.ts` parses
 * them, `manifest-schema.ts` checks each document), loaded and then watched. It keeps the last good version of every
 * object: a document that turns invalid, a half-written file or a directory that briefly disappears never removes
 * what was loaded; the problem is logged with `file:line` instead. Objects leave only when their file holds no
 * problem and no longer defines them (or the file is deleted). A refused policy with no last good version is held
 * as its fail-closed stand-in (`fail-closed-stand-in.ts`), so applying the directory never leaves it out.
 *
 * `change` carries the objects that changed after each reload, even when nothing did.
 */
import { EventEmitter } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { describeError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { failClosedStandIn, warnStandIn } from './fail-closed-stand-in.js';
import {
  isResource,
  loadManifestDir,
  objectKey,
  type Manifest,
  type ManifestLoad,
  type ObjectChanges,
  type ParsedFiles,
} from './manifest-dir.js';

/** Comparing a reload with what was held yields to the event loop after this long. */
const DIFF_SLICE_MS = 10;
/** Wait this long after the last file event before reloading: editors and atomic writers change files in bursts. */
const RELOAD_DEBOUNCE_MS = 50;

/** Every IP a workload-like object claims, for the duplicate-IP warning. */
function claimedIps(o: Manifest): string[] {
  if (!isResource(o)) return [];
  if (o.kind === 'Pod') {
    const list = o.status.podIPs?.map((x) => x?.ip) ?? [];
    return [...new Set([o.status.podIP, ...list].filter((x): x is string => typeof x === 'string' && x !== ''))];
  }
  if (o.kind === 'WorkloadEntry' && typeof o.spec.address === 'string') return [o.spec.address];
  return [];
}

/** True when `b` says what `a` says, from the same place (an unchanged file's objects are the same objects). */
function sameManifest(a: Manifest | undefined, b: Manifest): boolean {
  if (a === b) return true;
  if (a === undefined || a.source !== b.source) return false;
  return JSON.stringify(a.document ?? [a.metadata, a.spec]) === JSON.stringify(b.document ?? [b.metadata, b.spec]);
}

export class ManifestDirectory extends EventEmitter<{ change: [changes: ObjectChanges] }> {
  private objects = new Map<string, Manifest>();
  private list: readonly Manifest[] | undefined;
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
    private readonly dir: string,
    private readonly log: Logger,
  ) {
    super();
  }

  /**
   * Reads the directory again (parsing only the files whose text changed) and emits what changed, object by
   * object.
   */
  async reload(): Promise<void> {
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
      warnStandIn(this.log, r);
      first.set(r.key, standIn);
      out.push(standIn);
    }
    return out;
  }

  /** The object at `key` (`Kind/namespace/name`), if the directory holds it. */
  get(key: string): Manifest | undefined {
    return this.objects.get(key);
  }

  /** Every object the directory holds now. */
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
    if (this.stopped) return;
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
    if (this.stopped) return;
    if (this.rewatch) {
      this.rewatch = false;
      this.watchDir();
    }
    await this.reload();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.dirWatcher?.close();
    this.parentWatcher?.close();
  }
}
