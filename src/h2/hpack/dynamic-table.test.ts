import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HeaderField } from '../header-block.js';
import { DynamicTable, entrySize } from './dynamic-table.js';

const entries = (t: DynamicTable): HeaderField[] => Array.from({ length: t.length }, (_, i) => t.get(i)!);

test('an entry is name + value + 32 octets (§4.1), and the newest entry is index 0', () => {
  const t = new DynamicTable(4096);
  t.add(['blake', 'eats pizza']);
  t.add(['foo', 'bar']);
  assert.equal(entrySize('foo', 'bar'), 38);
  assert.equal(t.size, 47 + 38);
  assert.deepEqual(entries(t), [
    ['foo', 'bar'],
    ['blake', 'eats pizza'],
  ]);
  assert.equal(t.get(2), undefined);
});

test('adding evicts the oldest entries until the new one fits (§4.4)', () => {
  const t = new DynamicTable(38 * 3);
  for (const v of ['001', '002', '003', '004']) t.add(['foo', v]);
  assert.deepEqual(entries(t), [
    ['foo', '004'],
    ['foo', '003'],
    ['foo', '002'],
  ]);
  assert.equal(t.size, 38 * 3);
});

test('an entry larger than the table empties it and is not added (§4.4)', () => {
  const t = new DynamicTable(100);
  t.add(['foo', 'bar']);
  t.add(['long', 'x'.repeat(65)]);
  assert.deepEqual(entries(t), []);
  assert.equal(t.size, 0);
});

test('lowering the maximum size evicts until the table fits (§4.3); zero clears it', () => {
  const t = new DynamicTable(4096);
  t.add(['blake', 'eats pizza']);
  t.add(['foo', 'bar']);
  t.setMaxSize(38 + 47 - 1);
  assert.deepEqual(entries(t), [['foo', 'bar']], 'one octet short of both entries');
  t.setMaxSize(38);
  assert.deepEqual(entries(t), [['foo', 'bar']], 'exactly the remaining entry');
  assert.equal(t.maxSize, 38);
  t.setMaxSize(37);
  assert.deepEqual(entries(t), []);
  t.add(['foo', 'bar']);
  assert.deepEqual(entries(t), [], 'a 38-octet entry does not fit a 37-octet table');
  t.setMaxSize(0);
  assert.equal(t.length, 0);
});

test('the ring keeps order across growth and wrap-around', () => {
  const t = new DynamicTable(38 * 40);
  const want: HeaderField[] = [];
  for (let i = 0; i < 1000; i++) {
    const field: HeaderField = ['foo', String(i).padStart(3, '0')];
    t.add(field);
    want.unshift(field);
    if (want.length > 40) want.pop();
  }
  assert.deepEqual(entries(t), want);
});
