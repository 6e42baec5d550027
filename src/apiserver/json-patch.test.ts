import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from './api-error.js';
import { applyJsonPatch } from './json-patch.js';
import type { KubeObject } from './kube-object.js';

const base = (): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'c', labels: { 'a/b': 'x', 'c~d': 'y' } },
  data: { k: 'v' },
  list: [1, 2, 3],
  nested: { deep: { v: true }, nil: null },
});

/** The generic 422 the API server sends for an operation that does not apply, with evanphx's error as cause. */
function notApplicable(fn: () => unknown, cause: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ApiError);
    assert.equal(e.code, 422);
    assert.equal(e.reason, 'Invalid');
    assert.equal(e.message, 'the server rejected our request due to an error in our request');
    assert.deepEqual(e.toStatus().details, {});
    assert.equal((e.cause as Error).message, cause);
    return true;
  });
}

test('applyJsonPatch: RFC 6902 operations with ~0/~1 escapes and the "-" index', () => {
  const cases: [string, unknown[], (d: KubeObject) => void][] = [
    ['add member', [{ op: 'add', path: '/data/n', value: 'w' }], (d) => assert.deepEqual(d.data, { k: 'v', n: 'w' })],
    [
      'add replaces a member',
      [{ op: 'add', path: '/data/k', value: 'w' }],
      (d) => assert.deepEqual(d.data, { k: 'w' }),
    ],
    [
      'add ~1 escaped key',
      [{ op: 'add', path: '/metadata/labels/a~1c', value: 'z' }],
      (d) => assert.equal(d.metadata.labels?.['a/c'], 'z'),
    ],
    [
      'remove ~0 ~1 keys',
      [
        { op: 'remove', path: '/metadata/labels/c~0d' },
        { op: 'remove', path: '/metadata/labels/a~1b' },
      ],
      (d) => assert.deepEqual(d.metadata.labels, {}),
    ],
    ['add at index', [{ op: 'add', path: '/list/1', value: 9 }], (d) => assert.deepEqual(d.list, [1, 9, 2, 3])],
    ['add at end index', [{ op: 'add', path: '/list/3', value: 9 }], (d) => assert.deepEqual(d.list, [1, 2, 3, 9])],
    ['append with -', [{ op: 'add', path: '/list/-', value: 9 }], (d) => assert.deepEqual(d.list, [1, 2, 3, 9])],
    [
      'negative index counts from the end',
      [{ op: 'remove', path: '/list/-1' }],
      (d) => assert.deepEqual(d.list, [1, 2]),
    ],
    ['replace element', [{ op: 'replace', path: '/list/0', value: 0 }], (d) => assert.deepEqual(d.list, [0, 2, 3])],
    [
      'replace of a missing member adds it (v4)',
      [{ op: 'replace', path: '/data/new', value: 'n' }],
      (d) => assert.deepEqual(d.data, { k: 'v', new: 'n' }),
    ],
    [
      'move',
      [{ op: 'move', from: '/data/k', path: '/metadata/annotations' }],
      (d) => (assert.equal(d.metadata.annotations, 'v'), assert.deepEqual(d.data, {})),
    ],
    [
      'move within a list',
      [{ op: 'move', from: '/list/0', path: '/list/-' }],
      (d) => assert.deepEqual(d.list, [2, 3, 1]),
    ],
    [
      'copy is deep',
      [
        { op: 'copy', from: '/nested/deep', path: '/copy' },
        { op: 'replace', path: '/copy/v', value: false },
      ],
      (d) => assert.deepEqual([d.copy, d.nested], [{ v: false }, { deep: { v: true }, nil: null }]),
    ],
    [
      'copy of a missing member copies null (v4)',
      [{ op: 'copy', from: '/data/none', path: '/x' }],
      (d) => assert.equal(d.x, null),
    ],
    ['add without value adds null (v4)', [{ op: 'add', path: '/x' }], (d) => assert.equal(d.x, null)],
    [
      'test passes',
      [
        { op: 'test', path: '/nested', value: { nil: null, deep: { v: true } } },
        { op: 'test', path: '/list/1', value: 2 },
      ],
      (d) => assert.deepEqual(d.list, [1, 2, 3]),
    ],
    [
      'test of a missing member against null passes',
      [{ op: 'test', path: '/data/none', value: null }],
      (d) => assert.equal(d.kind, 'ConfigMap'),
    ],
    [
      'replace the whole document',
      [{ op: 'replace', path: '', value: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'd' } } }],
      (d) => assert.equal(d.metadata.name, 'd'),
    ],
    ['a null patch changes nothing', [], (d) => assert.deepEqual(d, base())],
  ];
  for (const [name, ops, check] of cases) {
    const doc = base();
    const out = applyJsonPatch(doc, name === 'a null patch changes nothing' ? null : ops);
    check(out);
    assert.deepEqual(doc, base(), `${name}: input unchanged`);
  }
});

test('applyJsonPatch: operations that do not apply are the generic 422 Invalid, a failed test included', () => {
  const doc = base();
  notApplicable(
    () => applyJsonPatch(doc, [{ op: 'test', path: '/data/k', value: 'other' }]),
    'testing value /data/k failed: test failed',
  );
  notApplicable(
    () => applyJsonPatch(doc, [{ op: 'test', path: '/data/none', value: 'x' }]),
    'testing value /data/none failed: test failed',
  );
  notApplicable(
    () => applyJsonPatch(doc, [{ op: 'remove', path: '/data/none' }]),
    "error in remove for path: '/data/none': Unable to remove nonexistent key: none: missing value",
  );
  notApplicable(
    () => applyJsonPatch(doc, [{ op: 'add', path: '/no/such', value: 1 }]),
    'add operation does not apply: doc is missing path: "/no/such": missing value',
  );
  notApplicable(
    () => applyJsonPatch(doc, [{ op: 'add', path: '/list/5', value: 1 }]),
    "error in add for path: '/list/5': Unable to access invalid index: 5: invalid index referenced",
  );
  notApplicable(
    () => applyJsonPatch(doc, [{ op: 'add', path: '/list/x', value: 1 }]),
    `error in add for path: '/list/x': value was not a proper array index: 'x': strconv.Atoi: parsing "x": invalid syntax`,
  );
  notApplicable(
    () => applyJsonPatch(doc, [{ op: 'replace', path: '/list/3', value: 1 }]),
    'replace operation does not apply: doc is missing key: /list/3: missing value',
  );
  notApplicable(
    () => applyJsonPatch(doc, [{ op: 'add', path: '', value: {} }]),
    'add operation does not apply: doc is missing path: "": missing value',
  );
  notApplicable(() => applyJsonPatch(doc, [{ op: 'remove' }]), 'remove operation failed to decode path: missing value');
  notApplicable(() => applyJsonPatch(doc, [{ op: 'frobnicate', path: '/a' }]), 'Unexpected kind: frobnicate');
  notApplicable(() => applyJsonPatch(doc, [null]), 'Unexpected kind: unknown');
  notApplicable(
    () => applyJsonPatch(doc, [{ op: 'add', path: '/nested/nil/x', value: 1 }]),
    'add operation does not apply: doc is missing path: "/nested/nil/x": missing value',
  );
  // The whole patch applies or nothing does.
  notApplicable(
    () =>
      applyJsonPatch(doc, [
        { op: 'add', path: '/data/n', value: 1 },
        { op: 'test', path: '/data/n', value: 2 },
      ]),
    'testing value /data/n failed: test failed',
  );
  assert.deepEqual(doc, base());
});

test('applyJsonPatch: a body that is not a list of operations is 400, too many operations 413, a non-object result 422', () => {
  assert.throws(() => applyJsonPatch(base(), { op: 'add' }), {
    reason: 'BadRequest',
    message: 'json: cannot unmarshal object into Go value of type jsonpatch.Patch',
  });
  assert.throws(() => applyJsonPatch(base(), ['add']), {
    reason: 'BadRequest',
    message: 'json: cannot unmarshal string into Go value of type jsonpatch.Operation',
  });
  const many = Array.from({ length: 10_001 }, () => ({ op: 'test', path: '/kind', value: 'ConfigMap' }));
  assert.throws(() => applyJsonPatch(base(), many), {
    reason: 'RequestEntityTooLarge',
    code: 413,
    message: 'Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001',
  });
  assert.doesNotThrow(() => applyJsonPatch(base(), many.slice(1)));
  assert.throws(
    () => applyJsonPatch(base(), [{ op: 'replace', path: '', value: [1] }]),
    (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.code, 422);
      assert.equal(e.details?.causes?.[0]?.field, 'patch');
      return true;
    },
  );
});
