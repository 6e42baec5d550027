import { test } from 'node:test';
import assert from 'node:assert/strict';
import { asRecord, isRecord } from './record.js';

test('isRecord: a parsed JSON object is a record; null, arrays and scalars are not', () => {
  assert.equal(isRecord(JSON.parse('{"a":1}')), true);
  for (const v of [null, undefined, [], [{}], 'x', 1, true]) assert.equal(isRecord(v), false, JSON.stringify(v));
});

test('asRecord: what is not a plain object reads as an empty one, so optional sections need no guard', () => {
  const o = { spec: { a: 1 } };
  assert.equal(asRecord(o), o);
  assert.deepEqual(asRecord(['a']), {});
  assert.deepEqual(asRecord(null), {});
});
