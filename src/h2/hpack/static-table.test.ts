import { test } from 'node:test';
import assert from 'node:assert/strict';
import { STATIC_TABLE, staticFieldIndex, staticNameIndex } from './static-table.js';

test('RFC 7541 Appendix A: 61 entries, 1-based, spot-checked at both ends and in the middle', () => {
  assert.equal(STATIC_TABLE.length, 61);
  assert.deepEqual(STATIC_TABLE[0], [':authority', '']);
  assert.deepEqual(STATIC_TABLE[1], [':method', 'GET']);
  assert.deepEqual(STATIC_TABLE[15], ['accept-encoding', 'gzip, deflate']);
  assert.deepEqual(STATIC_TABLE[60], ['www-authenticate', '']);
});

test('lookups: a full match, the lowest index of a name, and 0 for neither', () => {
  assert.equal(staticFieldIndex(':method', 'POST'), 3);
  assert.equal(staticFieldIndex(':status', '200'), 8);
  assert.equal(staticFieldIndex(':authority', ''), 1);
  assert.equal(staticFieldIndex(':method', 'CONNECT'), 0);
  assert.equal(staticNameIndex(':method'), 2);
  assert.equal(staticNameIndex(':status'), 8);
  assert.equal(staticNameIndex('x-forwarded-for'), 0);
  assert.equal(staticFieldIndex(':method\0GET', ''), 0, 'the key separator cannot forge a match');
});
