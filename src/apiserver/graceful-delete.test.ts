import assert from 'node:assert/strict';
import { test } from 'node:test';
import { beforeDelete } from './graceful-delete.js';
import type { KubeObject } from './kube-object.js';
import { podStrategy } from './strategies/pod.js';

const NOW = Date.parse('2025-01-01T00:00:00Z');

function pod(spec: Record<string, unknown>, phase = 'Running', meta: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default', generation: 1, ...meta },
    spec: { terminationGracePeriodSeconds: 30, ...spec },
    status: { phase },
  };
}

test('a bound pod is marked with deletionTimestamp now + terminationGracePeriodSeconds and its generation bumped', () => {
  const r = beforeDelete(podStrategy, pod({ nodeName: 'n1' }), undefined, NOW);
  assert.equal(r.kind, 'graceful');
  if (r.kind !== 'graceful') return;
  assert.equal(r.period, 30);
  assert.equal(r.obj.metadata.deletionTimestamp, '2025-01-01T00:00:30Z');
  assert.equal(r.obj.metadata.deletionGracePeriodSeconds, 30);
  assert.equal(r.obj.metadata.generation, 2);
});

test('DeleteOptions.gracePeriodSeconds overrides the pod spec; a negative one is 1', () => {
  const asked = beforeDelete(podStrategy, pod({ nodeName: 'n1' }), 5, NOW);
  assert.equal(asked.kind === 'graceful' && asked.period, 5);
  const negative = beforeDelete(podStrategy, pod({ nodeName: 'n1' }), -3, NOW);
  assert.equal(negative.kind === 'graceful' && negative.period, 1);
});

test('an unscheduled, Succeeded or Failed pod gets grace 0 (removed at once)', () => {
  for (const p of [pod({}), pod({ nodeName: 'n1' }, 'Succeeded'), pod({ nodeName: 'n1' }, 'Failed')]) {
    const r = beforeDelete(podStrategy, p, 10, NOW);
    assert.equal(r.kind === 'graceful' && r.period, 0);
  }
});

test('a second delete may only shorten the grace period: the deadline moves back by the difference', () => {
  const marked = pod({ nodeName: 'n1' }, 'Running', {
    deletionTimestamp: '2025-01-01T00:00:30Z',
    deletionGracePeriodSeconds: 30,
  });
  assert.equal(beforeDelete(podStrategy, marked, undefined, NOW).kind, 'pending');
  assert.equal(beforeDelete(podStrategy, marked, 30, NOW).kind, 'pending');
  assert.equal(beforeDelete(podStrategy, marked, 60, NOW).kind, 'pending');
  const shorter = beforeDelete(podStrategy, marked, 10, NOW);
  assert.equal(shorter.kind, 'graceful');
  if (shorter.kind !== 'graceful') return;
  assert.equal(shorter.obj.metadata.deletionTimestamp, '2025-01-01T00:00:10Z');
  assert.equal(shorter.obj.metadata.deletionGracePeriodSeconds, 10);
  const now = beforeDelete(podStrategy, marked, 0, NOW);
  assert.equal(now.kind === 'graceful' && now.period, 0);
});

test('kinds without graceful deletion, and objects marked without a grace period, take the ordinary delete', () => {
  assert.equal(beforeDelete(undefined, pod({ nodeName: 'n1' }), 5, NOW).kind, 'none');
  const finalizing = pod({ nodeName: 'n1' }, 'Running', { deletionTimestamp: '2025-01-01T00:00:00Z' });
  assert.equal(beforeDelete(podStrategy, finalizing, 5, NOW).kind, 'none');
});
