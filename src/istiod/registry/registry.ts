import { EventEmitter } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import type { Logger } from 'pino';
import { loadManifestDir, type Manifest } from './manifest-dir.js';

/** Wait this long after the last file event before reloading. */
const RELOAD_DEBOUNCE_MS = 50;

/** The pod facts the CA's impersonation check needs (spec §2.4 step 2). */
export interface PodFacts {
  readonly name: string;
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly nodeName: string;
  readonly phase: string;
}

/**
 * istiod's service registry over a manifest directory. This slice holds the objects and answers pod questions;
 * the Workload/Service/Authorization model and the watcher build on it.
 */
export class Registry extends EventEmitter<{ change: [] }> {
  private objects: readonly Manifest[] = [];
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reloading = Promise.resolve();

  constructor(
    private readonly dir: string | undefined,
    private readonly log: Logger,
  ) {
    super();
  }

  async reload(): Promise<void> {
    if (this.dir === undefined) return;
    const { objects, errors } = await loadManifestDir(this.dir);
    for (const e of errors) this.log.error({ error: e.message }, 'skipped an invalid manifest; the rest of the directory is in use');
    this.objects = objects;
    this.emit('change');
  }

  /** Every object currently in the registry. */
  all(): readonly Manifest[] {
    return this.objects;
  }

  /** Reloads on any change in the directory (debounced: editors write in bursts). */
  watch(): void {
    if (this.dir === undefined) return;
    this.watcher = watch(this.dir, () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => {
        this.reloading = this.reloading.then(() => this.reload()).catch((e: unknown) => this.log.error({ error: String(e) }, 'manifest reload failed'));
      }, RELOAD_DEBOUNCE_MS);
    });
    this.watcher.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.watcher?.close();
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
