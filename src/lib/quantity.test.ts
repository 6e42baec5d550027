import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseQuantity } from './quantity.js';

test('quantities read as Kubernetes reads them: binary and decimal suffixes, milli, exponents; anything else is not one', () => {
  assert.equal(parseQuantity('128Mi'), 128 * 2 ** 20);
  assert.equal(parseQuantity('1G'), 1e9);
  assert.equal(parseQuantity('500m'), 0.5);
  assert.equal(parseQuantity('2'), 2);
  assert.equal(parseQuantity('1.5Gi'), 1.5 * 2 ** 30);
  assert.equal(parseQuantity('1e3'), 1000);
  assert.equal(parseQuantity('12Mb'), undefined);
  assert.equal(parseQuantity(''), undefined);
});
