import { EventEmitter } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { describeError } from '../../lib/errors.js';
import { parseLocalConfig, readLocalConfigText, type LocalConfig } from './local-config.js';

/** Editors and atomic writers change files in bursts (truncate, write, rename); wait this long after the last event. */
const DEBOUNCE_MS = 50;

/**
 * Watches the local config file (`LOCAL_XDS_PATH`) and applies each valid version. It watches the file's
 * directory and re-reads the file on any event there, so every way a file is replaced is seen: an editor's
 * rename over it, and a ConfigMap mount's atomic writer, which never touches the file's own name (the file links
 * through `..data`, a symlink renamed over to a new `..<timestamp>` directory). A version identical to the one in
 * force is not applied again. An invalid version is logged with `file:line` (`rejected`) and the last good config
 * stays in force.
 */
export class LocalConfigWatcher extends EventEmitter<{ applied: [LocalConfig]; rejected: [unknown] }> {
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reloading = Promise.resolve();
  private text: string | undefined;

  constructor(
    private readonly file: string,
    private readonly apply: (cfg: LocalConfig) => void,
    private readonly log: Logger,
  ) {
    super();
  }

  /** Loads the file once (throwing if invalid: ztunnel refuses to start on bad config), then watches it. */
  async start(): Promise<void> {
    const text = await readLocalConfigText(this.file);
    this.apply(parseLocalConfig(this.file, text));
    this.text = text;
    this.watcher = watch(path.dirname(path.resolve(this.file)), () => {
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
    let text: string;
    try {
      text = await readLocalConfigText(this.file);
      if (text === this.text) return;
      cfg = parseLocalConfig(this.file, text);
    } catch (e) {
      this.log.error({ error: describeError(e) }, 'rejected local config change; keeping the last good config');
      this.emit('rejected', e);
      return;
    }
    this.text = text;
    this.apply(cfg);
    this.log.info(
      {
        file: this.file,
        workloads: cfg.workloads.length,
        services: cfg.services.length,
        policies: cfg.policies.length,
      },
      'applied local config',
    );
    this.emit('applied', cfg);
  }
}
