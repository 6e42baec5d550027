import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from './api-error.js';
import type { KubeObject } from './kube-object.js';
import { applyMergePatch } from './merge-patch.js';

const META = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } };
const doc = (fields: Record<string, unknown>): KubeObject => ({ ...META, ...fields });

test('applyMergePatch: the RFC 7386 appendix A examples', () => {
  const cases: [Record<string, unknown>, Record<string, unknown>, Record<string, unknown>][] = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  for (const [target, patch, want] of cases) {
    const input = doc(target);
    assert.deepEqual(applyMergePatch(input, patch), doc(want), JSON.stringify([target, patch]));
    assert.deepEqual(input, doc(target), 'input unchanged');
  }
});

test('applyMergePatch: evanphx v4 prunes nulls from objects it adds, also inside a new array, but not from an array replacing an object', () => {
  assert.deepEqual(applyMergePatch(doc({}), { a: [{ x: null, y: 1 }, null] }), doc({ a: [{ y: 1 }, null] }));
  assert.deepEqual(applyMergePatch(doc({ a: { b: 1 } }), { a: [{ x: null }] }), doc({ a: [{ x: null }] }));
  assert.deepEqual(applyMergePatch(doc({ a: 'scalar' }), { a: { x: null, y: { z: null } } }), doc({ a: { y: {} } }));
  assert.deepEqual(
    applyMergePatch(doc({ metadata: { name: 'c', labels: { a: '1', b: '2' } } }), {
      metadata: { labels: { a: null, c: '3' } },
    }),
    doc({ metadata: { name: 'c', labels: { b: '2', c: '3' } } }),
  );
});

test('applyMergePatch: a null or scalar patch is 400 "Invalid JSON Patch"; an array patch leaves no object (422)', () => {
  for (const bad of [null, 'x', 5, true])
    assert.throws(() => applyMergePatch(doc({}), bad), {
      reason: 'BadRequest',
      code: 400,
      message: 'Invalid JSON Patch',
    });
  assert.throws(
    () => applyMergePatch(doc({}), [{ a: null }]),
    (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.code, 422);
      assert.match(e.message, /^ "" is invalid: patch: Invalid value: "\[\{\}\]": json: cannot unmarshal array/);
      return true;
    },
  );
});
