import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CapturedLogs } from '../../test/helpers/captured-logs.js';
import { ReconcileQueue } from './reconcile-queue.js';

/** A queue whose reconciles are recorded; `fail(key, attempt)` decides which attempts throw. */
function recording(fail: (key: string, attempt: number) => boolean = () => false): {
  queue: ReconcileQueue;
  calls: string[];
  logs: CapturedLogs;
  reconciled: (n: number) => Promise<void>;
} {
  const logs = new CapturedLogs('test');
  const calls: string[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const queue = new ReconcileQueue(
    (key) => {
      calls.push(key);
      for (const w of waiters.filter((x) => calls.length >= x.n)) w.resolve();
      const attempt = calls.filter((k) => k === key).length;
      return fail(key, attempt) ? Promise.reject(new Error(`${key} failed`)) : Promise.resolve();
    },
    5,
    logs.control.scope('queue'),
  );
  const reconciled = (n: number): Promise<void> =>
    calls.length >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }));
  return { queue, calls, logs, reconciled };
}

test('keys added before run() wait, each once however often it was added, and are reconciled in order', async () => {
  const { queue, calls, reconciled } = recording();
  for (const k of ['a', 'b', 'a', 'c', 'b']) queue.add(k);
  await Promise.resolve();
  assert.deepEqual(calls, [], 'nothing before the informers synced');
  queue.run();
  await reconciled(3);
  assert.deepEqual(calls, ['a', 'b', 'c']);
  queue.stop();
});

test('a key added while it is being reconciled is reconciled again afterwards', async () => {
  const rec = recording((key, attempt) => {
    if (attempt === 1) rec.queue.add(key);
    return false;
  });
  rec.queue.add('a');
  rec.queue.run();
  await rec.reconciled(2);
  assert.deepEqual(rec.calls, ['a', 'a']);
  rec.queue.stop();
});

test('a failing key is retried until it succeeds', async () => {
  const { queue, calls, reconciled } = recording((_k, attempt) => attempt < 3);
  queue.run();
  queue.add('a');
  await reconciled(3);
  assert.deepEqual(calls, ['a', 'a', 'a']);
  queue.stop();
});

test('a key that keeps failing is dropped after maxAttempts with an error, and the next event starts over', async () => {
  const { queue, calls, logs, reconciled } = recording(() => true);
  queue.run();
  queue.add('a');
  const dropped = await logs.waitFor(
    'budget exceeded',
    (l) => l['message'] === 'reconcile failed; retry budget exceeded, waiting for the next event',
  );
  assert.deepEqual([dropped['key'], dropped['attempts'], calls.length], ['a', 5, 5]);
  queue.add('a');
  await reconciled(6);
  queue.stop();
});

test('retry delays double from 5 ms up to maxRetryDelayMs and stay there', async () => {
  const logs = new CapturedLogs('test');
  let calls = 0;
  const queue = new ReconcileQueue(
    () => (++calls < 6 ? Promise.reject(new Error('not yet')) : Promise.resolve()),
    Number.MAX_SAFE_INTEGER,
    logs.control.scope('queue'),
    20,
  );
  queue.run();
  queue.add('a');
  await logs.waitFor('fifth retry', (l) => l['message'] === 'reconcile failed; retrying' && l['attempts'] === 5);
  assert.deepEqual(
    logs.lines.filter((l) => l['message'] === 'reconcile failed; retrying').map((l) => l['retryMs']),
    [5, 10, 20, 20, 20],
  );
  queue.stop();
});
