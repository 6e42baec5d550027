import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WatchCache, deepFreeze, type StorageEvent } from './watch-cache.js';

function event(revision: number, key = `/registry/core/pods/default/p${revision}`): StorageEvent {
  return deepFreeze({
    type: 'ADDED',
    key,
    revision,
    object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: `p${revision}`, resourceVersion: String(revision) } },
  });
}

const revisions = (events: readonly StorageEvent[] | undefined): number[] | undefined => events?.map((e) => e.revision);

/** Resolves once queued microtasks (the replay delivery) have run. */
const afterMicrotasks = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('since: the ring serves revisions after `from` across wrap-around, and says when it no longer reaches back', () => {
  const c = new WatchCache(4, 10);
  assert.deepEqual(c.since(10), []);
  for (let r = 11; r <= 17; r++) c.append(event(r));
  assert.equal(c.oldestRevision, 14);
  assert.equal(c.lastRevision, 17);
  assert.deepEqual(revisions(c.since(13)), [14, 15, 16, 17]);
  assert.deepEqual(revisions(c.since(15)), [16, 17]);
  assert.deepEqual(c.since(17), []);
  assert.deepEqual(c.since(99), []);
  assert.equal(c.since(12), undefined, 'revision 13 was evicted');
});

test('append: an event that does not follow the last revision is refused (revisions are contiguous)', () => {
  const c = new WatchCache(4, 0);
  c.append(event(1));
  assert.throws(() => c.append(event(3)), /does not follow 1/);
  assert.throws(() => c.append(event(1)), /does not follow 1/);
});

test('watch: the replay is delivered after watch() returns, then live events, in revision order, filtered by prefix', async () => {
  const c = new WatchCache(8, 0);
  for (let r = 1; r <= 3; r++) c.append(event(r));
  const got: number[] = [];
  c.watch('/registry/core/pods/default/', 1, c.since(1)!, (e) => got.push(e.revision));
  c.append(event(4));
  c.append(event(5, '/registry/core/services/default/s5'));
  assert.deepEqual(got, [], 'nothing is delivered before watch() returns and the turn ends');
  await afterMicrotasks();
  c.append(event(6));
  assert.deepEqual(got, [2, 3, 4, 6]);
});

test('watch: a watcher from a revision ahead of the cache gets only the events after it', () => {
  const c = new WatchCache(8, 5);
  const got: number[] = [];
  c.watch('', 7, [], (e) => got.push(e.revision));
  for (let r = 6; r <= 9; r++) c.append(event(r));
  assert.deepEqual(got, [8, 9]);
});

test('watch: a listener that throws ends its own watch only; onError gets the error and others keep receiving', async () => {
  const c = new WatchCache(8, 0);
  const good: number[] = [];
  const errors: unknown[] = [];
  let badCalls = 0;
  c.watch(
    '',
    0,
    [],
    () => {
      badCalls++;
      throw new Error('listener failed');
    },
    (err) => errors.push(err),
  );
  c.watch('', 0, [], (e) => good.push(e.revision));
  c.watch('', 0, [], () => {
    throw new Error('no onError');
  });
  c.append(event(1));
  c.append(event(2));
  assert.deepEqual(good, [1, 2]);
  assert.equal(badCalls, 1);
  assert.equal(errors.length, 1);
  assert.match((errors[0] as Error).message, /listener failed/);
  assert.equal(c.watcherCount, 1);

  // A throw during the replay ends that watch too.
  const replayErrors: unknown[] = [];
  c.watch(
    '',
    0,
    c.since(0)!,
    () => {
      throw new Error('replay failed');
    },
    (err) => replayErrors.push(err),
  );
  await afterMicrotasks();
  assert.equal(replayErrors.length, 1);
  assert.equal(c.watcherCount, 1);
});

test('watch: a watcher registered by a listener during dispatch gets each event once', async () => {
  const c = new WatchCache(8, 0);
  const late: number[] = [];
  let registered = false;
  c.watch('', 0, [], () => {
    if (registered) return;
    registered = true;
    c.watch('', 0, c.since(0)!, (e) => late.push(e.revision));
  });
  c.append(event(1));
  c.append(event(2));
  await afterMicrotasks();
  c.append(event(3));
  assert.deepEqual(late, [1, 2, 3]);
});

test('watch: stop ends delivery, including a replay not yet delivered; stopAll ends every watch', async () => {
  const c = new WatchCache(8, 0);
  c.append(event(1));
  const got: number[] = [];
  const stop = c.watch('', 0, c.since(0)!, (e) => got.push(e.revision));
  stop();
  await afterMicrotasks();
  c.append(event(2));
  assert.equal(got.length, 0);
  c.watch('', 0, [], (e) => got.push(e.revision));
  c.stopAll();
  c.append(event(3));
  assert.equal(got.length, 0);
  assert.equal(c.watcherCount, 0);
});

test('deepFreeze: event objects cannot be changed by one watcher under the others', () => {
  const e = event(1);
  assert.throws(() => {
    (e.object.metadata as Record<string, unknown>).name = 'changed';
  }, TypeError);
});
