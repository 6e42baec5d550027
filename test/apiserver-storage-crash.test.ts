import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Storage, type StorageEvent } from '../src/apiserver/storage.js';

const BURST_HELPER = fileURLToPath(new URL('./helpers/storage-burst.js', import.meta.url));
/** Acknowledged writes before the parent's checkpoint: well inside the writer's endless burst. */
const ACKS_BEFORE_KILL = 500;

const dir = mkdtempSync(path.join(tmpdir(), 'amesh-storage-crash-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('kill -9 during a burst of writes: every acknowledged write survives, and a watch from the revision the parent had reached replays exactly the later events', async () => {
  const child = spawn(process.execPath, [...process.execArgv, BURST_HELPER, dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = once(child, 'exit');
  const outputEnded = once(child.stdout, 'close');

  // Every line the writer printed is an acknowledged write. After ACKS_BEFORE_KILL of them the parent takes
  // its checkpoint (the newest revision it has seen, as an informer would hold it), and kills the writer as soon
  // as more acknowledgements arrive, so the burst is still going and there are events after the checkpoint.
  const acked = new Map<string, number>();
  let checkpoint: number | undefined;
  let partial = '';
  child.stdout.on('data', (d: Buffer) => {
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      const [rv, key] = line.split(' ');
      acked.set(key!, Number(rv));
    }
    if (checkpoint === undefined && acked.size >= ACKS_BEFORE_KILL) checkpoint = Math.max(...acked.values());
    else if (checkpoint !== undefined && lines.length > 0) child.kill('SIGKILL');
  });
  const [code, signal] = (await exited) as [number | null, string | null];
  await outputEnded;
  assert.equal(signal, 'SIGKILL', `the writer ended by itself (exit ${String(code)}): ${stderr}`);
  assert.ok(checkpoint !== undefined);
  const from = checkpoint;
  assert.ok(Math.max(...acked.values()) > from, 'writes were acknowledged after the checkpoint');

  const s = await Storage.open(dir);
  try {
    for (const [key, rv] of acked)
      assert.equal(s.get(key)?.metadata.resourceVersion, String(rv), `acknowledged write ${key}@${rv} was lost`);
    const revision = s.revision();
    assert.equal(
      s.list('/registry/core/pods/').items.length,
      revision,
      'every committed revision is one stored create',
    );

    const events: StorageEvent[] = [];
    const replayed = new Promise<void>((resolve) => {
      s.watch('/registry/', from, (e) => {
        events.push(e);
        if (e.revision === revision) resolve();
      });
    });
    await replayed;
    assert.deepEqual(
      events.map((e) => e.revision),
      Array.from({ length: revision - from }, (_, i) => from + i + 1),
    );
    for (const e of events) {
      assert.equal(e.type, 'ADDED');
      assert.deepEqual(e.object, s.get(e.key));
    }
    const replayedKeys = new Set(events.map((e) => e.key));
    for (const [key, rv] of acked)
      if (rv > from) assert.ok(replayedKeys.has(key), `acknowledged write ${key}@${rv} is missing from the replay`);

    const after = await s.create('/registry/core/pods/default/after-restart', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'after-restart' },
    });
    assert.equal(after.metadata.resourceVersion, String(revision + 1), 'revisions continue after the crash');
  } finally {
    await s.close();
  }
});
