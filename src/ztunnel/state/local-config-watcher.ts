import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { describeError } from '../../lib/errors.js';
import { loadLocalConfig, type LocalConfig } from './local-config.js';

/** Editors write in bursts (truncate, write, rename); wait this long after the last event before reloading. */
const DEBOUNCE_MS = 50;

/**
 * Watches the local config file (through its directory, so editors that replace the file are seen) and applies
 * each valid version. An invalid one is logged with `file:line` and the last good config stays in force.
 */
export class LocalConfigWatcher {
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reloading = Promise.resolve();

  constructor(
    private readonly file: string,
    private readonly apply: (cfg: LocalConfig) => void,
    private readonly log: Logger,
  ) {}

  /** Loads the file once (throwing if invalid: ztunnel refuses to start on bad config), then watches it. */
  async start(): Promise<void> {
    this.apply(await loadLocalConfig(this.file));
    const base = path.basename(this.file);
    this.watcher = watch(path.dirname(path.resolve(this.file)), (_ev, name) => {
      if (name !== null && name !== base) return;
      clearTimeout(this.timer);
      this.timer = setTimeout(() => {
        this.reloading = this.reloading.then(() => this.reload());
      }, DEBOUNCE_MS);
    });
    this.watcher.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.watcher?.close();
  }

  private async reload(): Promise<void> {
    let cfg: LocalConfig;
    try {
      cfg = await loadLocalConfig(this.file);
    } catch (e) {
      this.log.error({ error: describeError(e) }, 'rejected local config change; keeping the last good config');
      return;
    }
    this.apply(cfg);
    this.log.info({ file: this.file, workloads: cfg.workloads.length, services: cfg.services.length, policies: cfg.policies.length }, 'applied local config');
  }
}
