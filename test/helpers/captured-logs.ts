import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { LogControl } from '../../src/lib/log.js';

/**
 * JSON log lines of an in-process component, kept and announced as they are written, so a test waits on the line
 * it expects instead of sleeping.
 */
export class CapturedLogs {
  readonly lines: Record<string, unknown>[] = [];
  private readonly events = new EventEmitter<{ line: [Record<string, unknown>] }>();
  readonly control: LogControl;

  constructor(component: string, level = 'info') {
    const out = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        for (const text of chunk
          .toString()
          .split('\n')
          .filter((l) => l !== '')) {
          const line = JSON.parse(text) as Record<string, unknown>;
          this.lines.push(line);
          this.events.emit('line', line);
        }
        cb();
      },
    });
    this.control = new LogControl({ format: 'json', level, component, out });
  }

  /** The first line (already written or still to come) that `match` accepts; fails after `timeoutMs`. */
  waitFor(
    what: string,
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs = 10_000,
  ): Promise<Record<string, unknown>> {
    const seen = this.lines.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const onLine = (line: Record<string, unknown>): void => {
        if (!match(line)) return;
        clearTimeout(timer);
        this.events.off('line', onLine);
        resolve(line);
      };
      const timer = setTimeout(() => {
        this.events.off('line', onLine);
        reject(new Error(`timed out after ${timeoutMs}ms waiting for log line: ${what}`));
      }, timeoutMs);
      this.events.on('line', onLine);
    });
  }
}

/** Logs of an in-process component that a test does not read: nothing is written. */
export function silentLogs(component: string): LogControl {
  return new LogControl({
    format: 'json',
    level: 'silent',
    component,
    out: new Writable({ write: (_c, _e, cb) => cb() }),
  });
}
