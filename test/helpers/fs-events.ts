/** Helpers for tests of file watchers: wait on the watcher's own event, and write the way Kubernetes mounts do. */
import { once, type EventEmitter } from 'node:events';
import { mkdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** How long a watcher may take to report a change before the test fails. */
export const WATCH_DEADLINE_MS = 10_000;

/**
 * Runs `act`, then resolves with the arguments of the first `event` that `emitter` emits after it started. The
 * deadline is a ref'd timer: watchers are usually unref'd, so without it a watcher that never fires would end the
 * event loop instead of failing the test.
 */
export async function eventAfter<T extends unknown[]>(
  emitter: EventEmitter,
  event: string,
  act: () => Promise<unknown>,
): Promise<T> {
  const ac = new AbortController();
  const deadline = setTimeout(
    () => ac.abort(new Error(`no "${event}" within ${WATCH_DEADLINE_MS} ms: the watcher never fired`)),
    WATCH_DEADLINE_MS,
  );
  try {
    const seen = once(emitter, event, { signal: ac.signal });
    await act();
    return (await seen) as T;
  } finally {
    clearTimeout(deadline);
  }
}

let generation = 0;

/**
 * Kubernetes' atomic writer (a ConfigMap volume): the files live in `..<timestamp>/`, `..data` links to it and
 * each visible file links through `..data`. A new version is a new timestamp directory and a `..data_tmp` link
 * renamed over `..data`; the old directory is then removed. The visible files' own names are never touched.
 */
export async function atomicWriterUpdate(dir: string, files: Readonly<Record<string, string>>): Promise<void> {
  const ts = `..2026_01_01_00_00_${String(generation++).padStart(2, '0')}.${process.pid}`;
  await mkdir(path.join(dir, ts));
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, ts, name), text);
  const old = await readlink(path.join(dir, '..data')).catch(() => undefined);
  await symlink(ts, path.join(dir, '..data_tmp'));
  await rename(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
  for (const name of Object.keys(files))
    await symlink(path.join('..data', name), path.join(dir, name)).catch(() => undefined);
  if (old !== undefined) await rm(path.join(dir, old), { recursive: true, force: true });
}
