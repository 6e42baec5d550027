import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareStrings } from './compare-strings.js';

test('compareStrings orders by code unit, upper case before lower case, whatever the locale', () => {
  assert.deepEqual(['b', 'a', 'B', 'a-1', 'a'].sort(compareStrings), ['B', 'a', 'a', 'a-1', 'b']);
  assert.equal(compareStrings('x', 'x'), 0);
});
