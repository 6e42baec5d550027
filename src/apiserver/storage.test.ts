import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApiError } from './api-error.js';
import type { KubeObject } from './kube-object.js';
import { Storage, type StorageEvent } from './storage.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'amesh-storage-'));
  dirs.push(d);
  return d;
}

/** Opens a store (in a new temporary directory unless `dir` is given), runs `fn` on it and closes it. */
async function withStore(
  fn: (s: Storage) => unknown,
  dir = tempDir(),
  options: { historyLimit?: number } = {},
): Promise<void> {
  const s = await Storage.open(dir, options);
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

const PODS = '/registry/core/pods/';
const podKey = (name: string, ns = 'default'): string => `${PODS}${ns}/${name}`;

function pod(name: string, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { nodeName: 'node-1' },
    ...extra,
  };
}

/** Creates pods p0..p<n-1> from ten concurrent writers; resolves when all are acknowledged. */
async function createBurst(s: Storage, n: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (next < n) {
        const i = next++;
        await s.create(podKey(`p${i}`), pod(`p${i}`));
      }
    }),
  );
}

/** Resolves once the store's revision has reached `revision` (checked after every I/O turn). */
async function revisionReached(s: Storage, revision: number): Promise<void> {
  while (s.revision() < revision) await new Promise((r) => setImmediate(r));
}

/** Resolves with the ApiError `p` rejects with (or that `fn` throws). */
async function apiError(p: Promise<unknown> | (() => unknown)): Promise<ApiError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    assert.ok(err instanceof ApiError, `expected an ApiError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected an ApiError');
}

/** Collects a watch's events until one with `revision` arrives. */
function collect(
  s: Storage,
  prefix: string,
  from: number,
  until: number,
): { events: StorageEvent[]; done: Promise<StorageEvent[]>; stop: () => void } {
  const events: StorageEvent[] = [];
  let resolve!: (e: StorageEvent[]) => void;
  const done = new Promise<StorageEvent[]>((r) => (resolve = r));
  if (until <= from) resolve(events);
  const stop = s.watch(prefix, from, (e) => {
    events.push(e);
    if (e.revision >= until) resolve(events);
  });
  return { events, done, stop };
}

test('create, get, list, update, delete: every object carries the revision of its last write as resourceVersion', async () => {
  await withStore(async (s) => {
    assert.equal(s.revision(), 0);
    const a = await s.create(podKey('a'), pod('a'));
    assert.equal(a.metadata.resourceVersion, '1');
    const b = await s.create(podKey('b'), { ...pod('b'), metadata: { ...pod('b').metadata, resourceVersion: '999' } });
    assert.equal(b.metadata.resourceVersion, '2', 'a resourceVersion given on create is replaced');
    await s.create('/registry/core/services/default/a', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'a' } });
    assert.equal(s.revision(), 3);
    assert.deepEqual(s.get(podKey('a')), a);
    assert.equal(s.get(podKey('zz')), undefined);

    const listed = s.list(PODS);
    assert.equal(listed.revision, 3);
    assert.deepEqual(
      listed.items.map((o) => o.metadata.name),
      ['a', 'b'],
      'key order, services excluded',
    );
    assert.equal(s.list('').items.length, 3);

    const a2 = await s.update(podKey('a'), { ...a, spec: { nodeName: 'node-2' } }, '1');
    assert.equal(a2.metadata.resourceVersion, '4');
    assert.deepEqual(a2.spec, { nodeName: 'node-2' });

    const gone = await s.delete(podKey('a'));
    assert.equal(gone.metadata.resourceVersion, '5', 'delete returns the last state at the deletion revision');
    assert.deepEqual(gone.spec, { nodeName: 'node-2' });
    assert.equal(s.get(podKey('a')), undefined);
    assert.deepEqual(
      s.list(PODS).items.map((o) => o.metadata.name),
      ['b'],
    );
  });
});

test('AlreadyExists, NotFound and Conflict come back as Kubernetes words them, and change nothing', async () => {
  await withStore(async (s) => {
    await s.create(podKey('a'), pod('a'));
    await s.create('/registry/apps/deployments/default/d', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'd', uid: 'uid-d' },
    });

    const exists = await apiError(s.create(podKey('a'), pod('a')));
    assert.equal(exists.reason, 'AlreadyExists');
    assert.equal(exists.code, 409);
    assert.equal(exists.message, 'pods "a" already exists');
    assert.deepEqual(exists.details, { name: 'a', group: '', kind: 'pods' });

    const missing = await apiError(s.update(podKey('nope'), pod('nope')));
    assert.equal(missing.reason, 'NotFound');
    assert.equal(missing.message, 'pods "nope" not found');
    assert.equal(
      (await apiError(s.delete('/registry/apps/deployments/default/x'))).message,
      'deployments.apps "x" not found',
    );
    assert.equal((await apiError(s.guaranteedUpdate(podKey('nope'), (o) => o))).reason, 'NotFound');

    const stale = await apiError(s.update(podKey('a'), pod('a', { spec: { nodeName: 'n9' } }), '7'));
    assert.equal(stale.reason, 'Conflict');
    assert.equal(
      stale.message,
      'Operation cannot be fulfilled on pods "a": the object has been modified; please apply your changes to the latest version and try again',
    );

    const uid = await apiError(s.delete('/registry/apps/deployments/default/d', { uid: 'other' }));
    assert.equal(uid.reason, 'Conflict');
    assert.match(
      uid.message,
      /^Operation cannot be fulfilled on deployments\.apps "d": StorageError: invalid object, Code: 4, .*Precondition failed: UID in precondition: other, UID in object meta: uid-d$/,
    );
    const rv = await apiError(s.delete(podKey('a'), { resourceVersion: '2' }));
    assert.match(
      rv.message,
      /Precondition failed: ResourceVersion in precondition: 2, ResourceVersion in object meta: 1$/,
    );

    assert.equal(s.revision(), 2, 'no refused write took a revision');
    assert.equal(s.get(podKey('a'))!.metadata.resourceVersion, '1');
    const deleted = await s.delete(podKey('a'), { uid: 'uid-a', resourceVersion: '1' });
    assert.equal(deleted.metadata.resourceVersion, '3');
  });
});

test('an update that changes nothing writes nothing: same resourceVersion, no event (etcd3 GuaranteedUpdate)', async () => {
  await withStore(async (s) => {
    const a = await s.create(podKey('a'), pod('a'));
    const events: StorageEvent[] = [];
    s.watch(PODS, 1, (e) => events.push(e));
    const metaWithoutRv = { ...a.metadata };
    delete metaWithoutRv.resourceVersion;
    const same = await s.update(podKey('a'), { ...a, metadata: metaWithoutRv });
    assert.equal(same.metadata.resourceVersion, '1');
    assert.equal((await s.guaranteedUpdate(podKey('a'), (o) => o)).metadata.resourceVersion, '1');
    const changed = await s.update(podKey('a'), { ...a, status: { phase: 'Running' } });
    assert.equal(changed.metadata.resourceVersion, '2');
    assert.deepEqual(
      events.map((e) => e.revision),
      [2],
    );
  });
});

test('guaranteedUpdate: concurrent read-modify-writes of one object are retried on conflict and none is lost', async () => {
  await withStore(async (s) => {
    await s.create('/registry/core/configmaps/default/counter', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'counter' },
      data: { n: '0' },
    });
    const bump = (o: KubeObject): Promise<KubeObject> =>
      // An asynchronous mutate lets the other writers commit in between, forcing conflicts.
      new Promise((resolve) =>
        setImmediate(() => resolve({ ...o, data: { n: String(Number((o.data as { n: string }).n) + 1) } })),
      );
    const results = await Promise.all(
      Array.from({ length: 25 }, () => s.guaranteedUpdate('/registry/core/configmaps/default/counter', bump)),
    );
    assert.deepEqual(s.get('/registry/core/configmaps/default/counter')!.data, { n: '25' });
    assert.deepEqual(
      results.map((r) => Number(r.metadata.resourceVersion)).sort((x, y) => x - y),
      Array.from({ length: 25 }, (_, i) => i + 2),
    );

    const refused = await apiError(
      s.guaranteedUpdate('/registry/core/configmaps/default/counter', () => {
        throw new ApiError('Invalid', 'mutate refused');
      }),
    );
    assert.equal(refused.message, 'mutate refused');
    assert.equal(s.revision(), 26);
  });
});

test('watch: many concurrent writers; every watcher sees each write once, in revision order, with the revision each writer got', async () => {
  await withStore(async (s) => {
    const WRITERS = 20;
    const PER_WRITER = 30; // create, then updates, then a delete per writer
    const total = WRITERS * PER_WRITER;
    const watchers = Array.from({ length: 3 }, () => collect(s, PODS, 0, total));
    const acked: number[] = [];
    await Promise.all(
      Array.from({ length: WRITERS }, async (_, w) => {
        const key = podKey(`w${w}`);
        acked.push(Number((await s.create(key, pod(`w${w}`))).metadata.resourceVersion));
        for (let i = 1; i < PER_WRITER - 1; i++)
          acked.push(Number((await s.update(key, pod(`w${w}`, { status: { i } }))).metadata.resourceVersion));
        acked.push(Number((await s.delete(key)).metadata.resourceVersion));
      }),
    );
    assert.deepEqual(
      acked.sort((a, b) => a - b),
      Array.from({ length: total }, (_, i) => i + 1),
      'each write got exactly its own revision',
    );
    for (const w of watchers) {
      const events = await w.done;
      assert.deepEqual(
        events.map((e) => e.revision),
        Array.from({ length: total }, (_, i) => i + 1),
      );
      for (const e of events) assert.equal(e.object.metadata.resourceVersion, String(e.revision));
    }
    const first = (await watchers[0]!.done).filter((e) => e.key === podKey('w0'));
    assert.deepEqual(
      first.map((e) => e.type),
      ['ADDED', ...Array<string>(PER_WRITER - 2).fill('MODIFIED'), 'DELETED'],
    );
    assert.equal(
      first.at(-1)!.prevObject!.metadata.resourceVersion,
      first.at(-2)!.object.metadata.resourceVersion,
      'DELETED carries the last state as prevObject',
    );
  });
});

test('list then watch in the same turn, while writers run: every later event exactly once, nothing before the list', async () => {
  await withStore(async (s) => {
    const N = 400;
    const writers = createBurst(s, N);
    // Let part of the burst commit, then list and watch in one synchronous turn mid-burst.
    await revisionReached(s, N / 4);
    const snapshot = s.list(PODS);
    const seen = collect(s, PODS, snapshot.revision, N);
    await writers;
    const events = await seen.done;
    assert.ok(snapshot.revision < N, 'the list was taken mid-burst');
    assert.deepEqual(
      events.map((e) => e.revision),
      Array.from({ length: N - snapshot.revision }, (_, i) => snapshot.revision + i + 1),
    );
    const names = new Set(snapshot.items.map((o) => o.metadata.name));
    for (const e of events) {
      assert.ok(!names.has(e.object.metadata.name), `${e.object.metadata.name ?? ''} was both listed and watched`);
      names.add(e.object.metadata.name);
    }
    assert.equal(names.size, N);
  });
});

test('watch from before a restart replays from the persisted history, with types and previous objects', async () => {
  const dir = tempDir();
  await withStore(async (s) => {
    for (let i = 0; i < 10; i++) await s.create(podKey(`p${i}`), pod(`p${i}`));
    await s.update(podKey('p3'), pod('p3', { status: { phase: 'Running' } }));
    await s.delete(podKey('p4'));
  }, dir);

  await withStore(async (s) => {
    assert.equal(s.revision(), 12);
    const w = collect(s, PODS, 8, 12);
    const events = await w.done;
    assert.deepEqual(
      events.map((e) => [e.type, e.revision, e.object.metadata.name]),
      [
        ['ADDED', 9, 'p8'],
        ['ADDED', 10, 'p9'],
        ['MODIFIED', 11, 'p3'],
        ['DELETED', 12, 'p4'],
      ],
    );
    assert.equal(events[2]!.prevObject!.metadata.resourceVersion, '4');
    assert.equal(events[3]!.object.metadata.resourceVersion, '12');
    await s.create(podKey('late'), pod('late'));
    assert.equal(events.at(-1)!.revision, 13, 'live events follow the replay');
  }, dir);
});

test('a watch older than the in-memory ring is replayed from lmdb history, then the ring, then live events, without a gap while writers run', async () => {
  // The ring holds 1,024 events; with 1,500 kept in history, a watch from 600 revisions back starts on disk.
  await withStore(
    async (s) => {
      const N = 2000;
      const writers = createBurst(s, N);
      await revisionReached(s, 1700);
      const from = s.revision() - 1200;
      const events = await collect(s, PODS, from, N).done;
      await writers;
      assert.deepEqual(
        events.map((e) => e.revision),
        Array.from({ length: N - from }, (_, i) => from + i + 1),
      );
    },
    tempDir(),
    { historyLimit: 1500 },
  );
});

test('history is bounded: a watch from a compacted revision gets 410 Expired, before and after a restart', async () => {
  const dir = tempDir();
  // Revisions 8..12 are kept: 7 is compacted, so a watch from 7 is complete and one from 6 is not.
  const check = async (st: Storage): Promise<void> => {
    const from7 = await collect(st, PODS, 7, 12).done;
    assert.deepEqual(
      from7.map((e) => e.revision),
      [8, 9, 10, 11, 12],
    );
    const err = await apiError(() => st.watch(PODS, 6, () => undefined));
    assert.equal(err.reason, 'Expired');
    assert.equal(err.code, 410);
    assert.equal(err.message, 'too old resource version: 6 (7)');
  };
  await withStore(
    async (s) => {
      for (let i = 0; i < 12; i++) await s.create(podKey(`p${i}`), pod(`p${i}`));
      await check(s);
    },
    dir,
    { historyLimit: 5 },
  );
  await withStore(check, dir, { historyLimit: 5 });
  // Reopened with a smaller limit, the store compacts down to it before serving.
  await withStore(
    async (s) => {
      assert.equal(
        (await apiError(() => s.watch(PODS, 9, () => undefined))).message,
        'too old resource version: 9 (10)',
      );
      assert.deepEqual(
        (await collect(s, PODS, 10, 12).done).map((e) => e.revision),
        [11, 12],
      );
    },
    dir,
    { historyLimit: 2 },
  );
});

test('a watch from beyond the store revision is refused with ResourceVersionTooLarge (504)', async () => {
  await withStore(async (s) => {
    await s.create(podKey('a'), pod('a'));
    const err = await apiError(() => s.watch(PODS, 5, () => undefined));
    assert.equal(err.reason, 'Timeout');
    assert.equal(err.code, 504);
    assert.equal(err.message, 'Too large resource version: 5, current: 1');
    assert.equal(err.details?.causes?.[0]?.reason, 'ResourceVersionTooLarge');
  });
});

test('restart: revisions keep increasing and are never reused, even after every object is deleted', async () => {
  const dir = tempDir();
  await withStore(async (s) => {
    for (const n of ['a', 'b', 'c']) await s.create(podKey(n), pod(n));
    for (const n of ['a', 'b', 'c']) await s.delete(podKey(n));
  }, dir);
  await withStore(async (s) => {
    assert.equal(s.revision(), 6);
    assert.deepEqual(s.list('').items, []);
    assert.equal((await s.create(podKey('a'), pod('a'))).metadata.resourceVersion, '7');
  }, dir);
});

test('a listener that throws ends only its own watch; other watchers and the store carry on', async () => {
  await withStore(async (s) => {
    const errors: unknown[] = [];
    s.watch(
      PODS,
      0,
      () => {
        throw new Error('broken consumer');
      },
      (err) => errors.push(err),
    );
    const good = collect(s, PODS, 0, 3);
    for (const n of ['a', 'b', 'c']) await s.create(podKey(n), pod(n));
    assert.deepEqual(
      (await good.done).map((e) => e.revision),
      [1, 2, 3],
    );
    assert.equal(errors.length, 1);
    assert.equal(s.get(podKey('c'))!.metadata.resourceVersion, '3');
  });
});

test('bad input is refused with BadRequest and leaves the store as it was', async () => {
  await withStore(async (s) => {
    await s.create(podKey('a'), pod('a'));
    const cyclic = pod('cyclic');
    cyclic.spec = cyclic;
    const refusals: [string, () => unknown][] = [
      ['cyclic object', () => s.create(podKey('cyclic'), cyclic)],
      ['BigInt', () => s.create(podKey('big'), pod('big', { spec: { n: 1n } }))],
      ['no metadata', () => s.create(podKey('x'), { apiVersion: 'v1', kind: 'Pod' } as unknown as KubeObject)],
      ['not an object', () => s.create(podKey('x'), 'pod' as unknown as KubeObject)],
      ['relative key', () => s.create('registry/x', pod('x'))],
      ['control character in key', () => s.create(`${PODS}default/a\u0000b`, pod('x'))],
      ['oversized key', () => s.get(`/${'k'.repeat(3000)}`)],
      ['non-string key', () => s.get(42 as unknown as string)],
      ['bad prefix', () => s.list('pods')],
      ['negative watch revision', () => s.watch(PODS, -1, () => undefined)],
      ['fractional watch revision', () => s.watch(PODS, 1.5, () => undefined)],
    ];
    for (const [what, act] of refusals) assert.equal((await apiError(act)).reason, 'BadRequest', what);
    await assert.rejects(
      s.create('relative', pod('x')),
      ApiError,
      'a refused write is a rejected promise, not a synchronous throw',
    );
    const huge = await apiError(s.create(podKey('huge'), pod('huge', { data: 'x'.repeat(2 * 1024 * 1024) })));
    assert.equal(huge.reason, 'RequestEntityTooLarge');
    assert.equal(s.revision(), 1);
    assert.deepEqual(
      s.list('').items.map((o) => o.metadata.name),
      ['a'],
    );
    assert.equal((await s.create(podKey('b'), pod('b'))).metadata.resourceVersion, '2');
    await assert.rejects(Storage.open(tempDir(), { historyLimit: 0 }), RangeError);
  });
});

test('objects handed out are copies: changing one never changes the store or what watchers see', async () => {
  await withStore(async (s) => {
    const input = pod('a');
    const created = await s.create(podKey('a'), input);
    input.metadata.name = 'changed-input';
    created.metadata.name = 'changed-result';
    s.get(podKey('a'))!.metadata.name = 'changed-get';
    s.list(PODS).items[0]!.metadata.name = 'changed-list';
    assert.equal(s.get(podKey('a'))!.metadata.name, 'a');
    const [e] = await collect(s, PODS, 0, 1).done;
    assert.ok(Object.isFrozen(e!.object.metadata), 'event objects are frozen: one object goes to every watcher');
  });
});

test('close: writes in flight finish first; afterwards the store refuses with ServiceUnavailable', async () => {
  const dir = tempDir();
  const s = await Storage.open(dir);
  const writes = Array.from({ length: 20 }, (_, i) => s.create(podKey(`p${i}`), pod(`p${i}`)));
  await s.close();
  assert.equal((await Promise.all(writes)).length, 20);
  assert.equal((await apiError(() => s.get(podKey('p1')))).reason, 'ServiceUnavailable');
  assert.equal((await apiError(() => s.create(podKey('x'), pod('x')))).reason, 'ServiceUnavailable');
  await withStore((reopened) => assert.equal(reopened.list(PODS).items.length, 20), dir);
});
