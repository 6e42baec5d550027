import { test } from 'node:test';
import assert from 'node:assert/strict';
import { threeWayMergePatch } from './three-way-merge-patch.js';

test('a three-way merge patch sets changed fields, deletes fields dropped from the manifest, and keeps fields others added', () => {
  const original = {
    spec: { action: 'ALLOW', rules: [{ a: 1 }], old: 'x' },
    metadata: { labels: { app: 'w', gone: 'y' } },
  };
  const modified = { spec: { action: 'DENY', rules: [{ a: 1 }] }, metadata: { labels: { app: 'w' } } };
  const current = {
    spec: { action: 'ALLOW', rules: [{ a: 1 }], old: 'x', clusterIP: '10.96.0.9' },
    metadata: { labels: { app: 'w', gone: 'y' }, uid: 'u' },
  };
  assert.deepEqual(threeWayMergePatch(original, modified, current), {
    spec: { action: 'DENY', old: null },
    metadata: { labels: { gone: null } },
  });
});

test('nothing to change is an empty patch, and lists are replaced whole', () => {
  const doc = { spec: { ports: [{ port: 80 }] } };
  assert.deepEqual(threeWayMergePatch(doc, doc, { ...doc, status: {} }), {});
  assert.deepEqual(threeWayMergePatch(doc, { spec: { ports: [{ port: 81 }] } }, doc), {
    spec: { ports: [{ port: 81 }] },
  });
});

test('a list unchanged since the last apply is left as the server defaulted it', () => {
  const applied = { spec: { containers: [{ name: 'c', image: 'i' }] } };
  const live = { spec: { containers: [{ name: 'c', image: 'i', terminationMessagePath: '/dev/termination-log' }] } };
  assert.deepEqual(threeWayMergePatch(applied, applied, live), {});
  assert.deepEqual(threeWayMergePatch(applied, { spec: { containers: [{ name: 'c', image: 'j' }] } }, live), {
    spec: { containers: [{ name: 'c', image: 'j' }] },
  });
});

test('a field deleted by someone else and dropped from the manifest is not deleted again', () => {
  assert.deepEqual(threeWayMergePatch({ a: 1, b: 2 }, { a: 1 }, { a: 1 }), {});
});
