import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../kube-object.js';
import { podDisruptionBudgetStrategy } from './pod-disruption-budget.js';

const messages = (causes: { field?: string; message: string }[]): string[] =>
  causes.map((c) => `${c.field ?? ''}: ${c.message}`);
const pdb = (spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'policy/v1',
  kind: 'PodDisruptionBudget',
  metadata: { name: 'web', namespace: 'shop' },
  spec,
});
test('a PodDisruptionBudget starts at generation 1 with an empty status, counts spec changes, and takes one bound at most', () => {
  const o = pdb({ minAvailable: 1, selector: { matchLabels: { app: 'web' } } });
  podDisruptionBudgetStrategy.prepareForCreate!(o);
  assert.equal(o.metadata.generation, 1);
  assert.deepEqual(o.status, { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 });
  assert.deepEqual(podDisruptionBudgetStrategy.validate!(o), []);
  const next = structuredClone(o);
  next.spec = { minAvailable: '50%' };
  next.status = { disruptionsAllowed: 9 };
  podDisruptionBudgetStrategy.prepareForUpdate!(next, o);
  assert.equal(next.metadata.generation, 2);
  assert.deepEqual(next.status, o.status);
  assert.deepEqual(
    messages(
      podDisruptionBudgetStrategy.validate!(
        pdb({ minAvailable: 1, maxUnavailable: '120%', unhealthyPodEvictionPolicy: 'Sometimes' }),
      ),
    ),
    [
      'spec: Invalid value: {"minAvailable":1,"maxUnavailable":"120%","unhealthyPodEvictionPolicy":"Sometimes"}: minAvailable and maxUnavailable cannot be both set',
      'spec.maxUnavailable: Invalid value: "120%": must not be greater than 100%',
      'spec.unhealthyPodEvictionPolicy: Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"',
    ],
  );
  assert.deepEqual(messages(podDisruptionBudgetStrategy.validate!(pdb({ minAvailable: -1 }))), [
    'spec.minAvailable: Invalid value: -1: must be greater than or equal to 0',
  ]);
});
