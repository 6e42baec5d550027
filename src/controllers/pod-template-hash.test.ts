import { test } from 'node:test';
import assert from 'node:assert/strict';
import { podTemplateHash } from './pod-template-hash.js';
import { safeEncodeString } from '../lib/safe-encode.js';

const TEMPLATE = { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'amesh-echo' }] } };

test('pod-template-hash: name-safe characters only, the same for the same template whatever its key order', () => {
  const h = podTemplateHash(TEMPLATE);
  assert.match(h, /^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/);
  assert.equal(podTemplateHash({ spec: TEMPLATE.spec, metadata: TEMPLATE.metadata }), h);
});

test('pod-template-hash: another template, or a collision count, gives another hash', () => {
  const h = podTemplateHash(TEMPLATE);
  assert.notEqual(podTemplateHash({ ...TEMPLATE, metadata: { labels: { app: 'web', v: '2' } } }), h);
  assert.notEqual(podTemplateHash(TEMPLATE, 1), h);
  assert.notEqual(podTemplateHash(TEMPLATE, 1), podTemplateHash(TEMPLATE, 2));
});

test('safeEncodeString maps each decimal digit to one character, as rand.SafeEncodeString does', () => {
  // '0' is code 48: 48 % 27 = 21 → '4'; '9' is 57 % 27 = 3 → 'f'.
  assert.equal(safeEncodeString('09'), '4f');
});
