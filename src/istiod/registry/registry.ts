import { EventEmitter } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { describeError } from '../../lib/errors.js';
import { loadManifestDir, objectKey, type Manifest, type ManifestLoad, type RejectedObject } from './manifest-dir.js';

/** Wait this long after the last file event before reloading: editors and atomic writers change files in bursts. */
const RELOAD_DEBOUNCE_MS = 50;

/** The pod facts the CA's impersonation check needs (istio `security/pkg/server/ca/authenticate` node authorizer). */
export interface PodFacts {
  readonly name: string;
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly nodeName: string;
  readonly phase: string;
}

/**
 * What stands in for a policy whose document was refused and that has no last good version: it cannot be
 * honoured and its selector cannot be trusted, so it denies every workload of its namespace (of the mesh, in
 * the root namespace: an AuthorizationPolicy without a selector there is GLOBAL). A refused PeerAuthentication
 * stands in as STRICT for its namespace. Fail closed: a policy we cannot read never opens anything.
 */
function failClosedStandIn(r: RejectedObject): Manifest | undefined {
  const spec = r.kind === 'AuthorizationPolicy' ? { action: 'DENY', rules: [{}] } : r.kind === 'PeerAuthentication' ? { mtls: { mode: 'STRICT' } } : undefined;
  if (spec === undefined) return undefined;
  const file = r.source.slice(0, r.source.lastIndexOf(':'));
  return { apiVersion: 'security.istio.io/v1', kind: r.kind, metadata: { name: r.name, namespace: r.namespace, labels: {}, annotations: {} }, spec, status: {}, source: r.source, file };
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

/**
 * istiod's service registry over a manifest directory. It keeps the last good version of every object: a
 * document that turns invalid, a half-written file or a directory that briefly disappears never removes what
 * was served; the problem is logged with `file:line` instead. Objects leave only when their file holds no
 * problem and no longer defines them (or the file is deleted).
 */
export class Registry extends EventEmitter<{ change: [] }> {
  private objects: readonly Manifest[] = [];
  /** The last good objects of each file. */
  private byFile = new Map<string, readonly Manifest[]>();
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

  async reload(): Promise<void> {
    if (this.dir === undefined) return;
    let load: ManifestLoad;
    try {
      load = await loadManifestDir(this.dir);
    } catch (e) {
      this.log.error({ dir: this.dir, error: describeError(e) }, 'cannot read the config directory; serving the last good state');
      return;
    }
    for (const e of load.errors) this.log.error({ error: e.message }, 'refused an invalid manifest; its object keeps its last good version');
    for (const w of load.warnings) this.log.warn(w);
    this.objects = this.merge(load);
    this.log.info({ objects: this.objects.length }, 'manifests loaded');
    this.emit('change');
  }

  private merge(load: ManifestLoad): Manifest[] {
    const fresh = new Map<string, Manifest[]>();
    for (const o of load.objects) fresh.set(o.file, [...(fresh.get(o.file) ?? []), o]);
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
          if (other !== undefined) this.log.warn(`${o.source}: ${key} claims IP ${ip}, already claimed by ${objectKey(other)} at ${other.source}`);
          else ips.set(ip, o);
        }
        out.push(o);
      }
    }
    for (const r of load.rejected) {
      if (first.has(r.key)) continue;
      const standIn = failClosedStandIn(r);
      if (standIn === undefined) continue;
      this.log.warn(`${r.source}: ${r.key} has no good version; it stands in as ${r.kind === 'PeerAuthentication' ? 'STRICT' : 'deny-all'} for its namespace until fixed`);
      first.set(r.key, standIn);
      out.push(standIn);
    }
    return out;
  }

  /** Every object currently in the registry. */
  all(): readonly Manifest[] {
    return this.objects;
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
      this.log.error({ dir: this.dir, error: describeError(e) }, 'cannot watch the config directory; waiting for it to appear');
    }
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.reloading = this.reloading.then(() => this.rewatchAndReload()).catch((e: unknown) => this.log.error({ error: describeError(e) }, 'manifest reload failed'));
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
    this.dirWatcher?.close();
    this.parentWatcher?.close();
  }

  pods(): PodFacts[] {
    return this.objects
      .filter((o) => o.kind === 'Pod')
      .map((o) => ({
        name: o.metadata.name,
        namespace: o.metadata.namespace,
        serviceAccount: typeof o.spec['serviceAccountName'] === 'string' ? o.spec['serviceAccountName'] : 'default',
        nodeName: typeof o.spec['nodeName'] === 'string' ? o.spec['nodeName'] : '',
        phase: typeof o.status['phase'] === 'string' ? o.status['phase'] : 'Running',
      }));
  }

  /** True when `namespace/serviceAccount` has a pod on `node` that has not failed (impersonation rule). */
  hasPodOnNode(namespace: string, serviceAccount: string, node: string): boolean {
    return this.pods().some((p) => p.namespace === namespace && p.serviceAccount === serviceAccount && p.nodeName === node && p.phase !== 'Failed');
  }

  nodeOfPod(namespace: string, name: string): string | undefined {
    return this.pods().find((p) => p.namespace === namespace && p.name === name)?.nodeName;
  }
}
