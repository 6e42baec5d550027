/**
 * Waits for something to change under a few paths (inotify, through fs.watch), as Istio's installer watches the CNI
 * config directory and its binaries (istio cni/pkg/util/pluginutil.go CreateFileWatcher): a path that does not exist
 * is skipped, a change is remembered until the next wait takes it, and a watch that fails counts as a change, since
 * whatever broke it (a directory removed) is what the caller must look at again. A watch is made before the caller
 * checks what it watches, so a change made during the check is not missed; it is closed before the caller writes
 * there itself, so its own writes do not wake it.
 */
import { watch, type FSWatcher } from 'node:fs';
import type { Logger } from '../../lib/log.js';

export interface WatchedPath {
  readonly path: string;
  /** For a directory: which entries count; all when absent. */
  readonly names?: (name: string) => boolean;
}

export class PathWatch {
  private readonly watchers: FSWatcher[] = [];
  private changed = false;
  private wake: (() => void) | undefined;

  constructor(paths: readonly WatchedPath[], log: Logger) {
    for (const p of paths) {
      let w: FSWatcher;
      try {
        w = watch(p.path);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        log.debug({ path: p.path }, 'not watching a path that does not exist');
        continue;
      }
      w.on('change', (_event, name) => {
        if (p.names === undefined || (typeof name === 'string' && p.names(name))) this.notify();
      });
      w.on('error', () => this.notify());
      this.watchers.push(w);
    }
  }

  private notify(): void {
    this.changed = true;
    this.wake?.();
  }

  /** Resolves at the first change since the previous wait (at once if one came meanwhile), or after `timeoutMs`. */
  async next(signal: AbortSignal, timeoutMs?: number): Promise<void> {
    signal.throwIfAborted();
    if (!this.changed) {
      let timer: NodeJS.Timeout | undefined;
      let onAbort: (() => void) | undefined;
      try {
        await new Promise<void>((resolve, reject) => {
          this.wake = resolve;
          onAbort = () => reject(signal.reason as Error);
          signal.addEventListener('abort', onAbort, { once: true });
          if (timeoutMs !== undefined) timer = setTimeout(resolve, timeoutMs);
        });
      } finally {
        this.wake = undefined;
        clearTimeout(timer);
        if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
      }
    }
    this.changed = false;
  }

  close(): void {
    for (const w of this.watchers) w.close();
    this.wake?.();
  }
}
