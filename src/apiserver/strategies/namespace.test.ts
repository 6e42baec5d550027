import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../kube-object.js';
import { namespaceStrategy } from './namespace.js';

function ns(spec?: unknown): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'team-a', resourceVersion: '1' },
    ...(spec !== undefined ? { spec } : {}),
  };
}

test('Namespace create: Active, the kubernetes finalizer added, the metadata.name label set', () => {
  const n = ns();
  namespaceStrategy.prepareForCreate!(n);
  assert.deepEqual(
    [n.status, n.spec, n.metadata.labels],
    [{ phase: 'Active' }, { finalizers: ['kubernetes'] }, { 'kubernetes.io/metadata.name': 'team-a' }],
  );
  const extra = ns({ finalizers: ['example.com/x'] });
  namespaceStrategy.prepareForCreate!(extra);
  assert.deepEqual(extra.spec, { finalizers: ['example.com/x', 'kubernetes'] });
  assert.deepEqual(namespaceStrategy.validate!(extra), []);
});

test('Namespace update: status and spec.finalizers stay as stored; the name label cannot be taken off', () => {
  const old = ns();
  namespaceStrategy.prepareForCreate!(old);
  old.status = { phase: 'Terminating' };
  const now = ns({ finalizers: [] });
  now.metadata.labels = { team: 'a' };
  namespaceStrategy.prepareForUpdate!(now, old);
  assert.deepEqual(
    [now.status, now.spec, now.metadata.labels],
    [{ phase: 'Terminating' }, { finalizers: ['kubernetes'] }, { team: 'a', 'kubernetes.io/metadata.name': 'team-a' }],
  );
});

test('Namespace spec.finalizers: qualified names, unprefixed ones only from the standard set', () => {
  assert.deepEqual(
    namespaceStrategy.validate!(ns({ finalizers: ['kubernetes', 'cleanup'] })).map((c) => [c.field, c.message]),
    [
      [
        'spec.finalizers',
        'Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified',
      ],
    ],
  );
});
