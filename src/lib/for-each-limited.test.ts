import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachLimited } from './for-each-limited.js';

test('forEachLimited never has more than the limit in flight and visits every item once', async () => {
  let inFlight = 0;
  let peak = 0;
  const seen: number[] = [];
  await forEachLimited([...Array(50).keys()], 4, async (i) => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    await new Promise<void>((r) => setImmediate(r));
    seen.push(i);
    inFlight--;
  });
  assert.equal(peak, 4);
  assert.deepEqual(
    seen.sort((a, b) => a - b),
    [...Array(50).keys()],
  );
});

test('forEachLimited rejects with the first failure after the started calls settle', async () => {
  const done: number[] = [];
  await assert.rejects(
    forEachLimited([1, 2, 3], 3, async (i) => {
      await new Promise<void>((r) => setImmediate(r));
      if (i === 2) throw new Error('two');
      done.push(i);
    }),
    /two/,
  );
  assert.deepEqual(done.sort(), [1, 3]);
});
