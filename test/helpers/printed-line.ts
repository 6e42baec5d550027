/** Waiting on a child process's JSON log lines (LOG_FORMAT=json) as it prints them, instead of polling its output. */
import type { ChildProcess } from 'node:child_process';
import { TEST_DEADLINE_MS } from './deadlines.js';

export interface PrintingProcess {
  readonly child: ChildProcess;
  /** Everything printed so far, stdout and stderr. */
  output(): string;
}

/**
 * The first JSON line `p` prints from now on (from character `o.since` of its output) that `match` accepts, or
 * with `o.count` the count-th. Fails when the process exits first or after TEST_DEADLINE_MS. Create it before
 * the action whose line it waits for.
 */
export function printedLine(
  p: PrintingProcess,
  what: string,
  match: (line: Record<string, unknown>) => boolean,
  o: { since?: number; count?: number } = {},
): Promise<Record<string, unknown>> {
  const since = o.since ?? p.output().length;
  const find = (): Record<string, unknown> | undefined => {
    const text = p.output().slice(since);
    let left = o.count ?? 1;
    for (const l of text.slice(0, text.lastIndexOf('\n') + 1).split('\n')) {
      if (!l.startsWith('{')) continue;
      const line = JSON.parse(l) as Record<string, unknown>;
      if (match(line) && --left === 0) return line;
    }
    return undefined;
  };
  return new Promise((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      p.child.stdout?.off('data', check);
      p.child.stderr?.off('data', check);
      p.child.off('exit', exited);
    };
    const check = (): void => {
      const line = find();
      if (line === undefined) return;
      done();
      resolve(line);
    };
    const exited = (): void => {
      done();
      const line = find();
      if (line !== undefined) resolve(line);
      else reject(new Error(`the process exited before printing ${what}:\n${p.output()}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`no line for ${what} within ${TEST_DEADLINE_MS} ms:\n${p.output().slice(since)}`));
    }, TEST_DEADLINE_MS);
    p.child.stdout?.on('data', check);
    p.child.stderr?.on('data', check);
    p.child.once('exit', exited);
    check();
  });
}
