import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../kube-object.js';
import { horizontalPodAutoscalerStrategy } from './horizontal-pod-autoscaler.js';

const messages = (causes: { field?: string; message: string }[]): string[] =>
  causes.map((c) => `${c.field ?? ''}: ${c.message}`);
const hpa = (spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'autoscaling/v2',
  kind: 'HorizontalPodAutoscaler',
  metadata: { name: 'web', namespace: 'shop' },
  spec,
});

test("an HPA gets minReplicas 1, 80% CPU when it names no metric, a behavior's missing rules, and an empty status", () => {
  const o = hpa({
    scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' },
    maxReplicas: 4,
    behavior: { scaleDown: { stabilizationWindowSeconds: 60 } },
  });
  horizontalPodAutoscalerStrategy.prepareForCreate!(o);
  assert.deepEqual(o.spec, {
    scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' },
    maxReplicas: 4,
    minReplicas: 1,
    metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }],
    behavior: {
      scaleDown: {
        stabilizationWindowSeconds: 60,
        selectPolicy: 'Max',
        policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }],
      },
      scaleUp: {
        stabilizationWindowSeconds: 0,
        selectPolicy: 'Max',
        policies: [
          { type: 'Pods', value: 4, periodSeconds: 15 },
          { type: 'Percent', value: 100, periodSeconds: 15 },
        ],
      },
    },
  });
  assert.deepEqual(o.status, { desiredReplicas: 0 });
  assert.deepEqual(horizontalPodAutoscalerStrategy.validate!(o), []);
});

test("an HPA's bounds, target and metrics are checked as kube's autoscaling validation checks them", () => {
  assert.deepEqual(
    messages(
      horizontalPodAutoscalerStrategy.validate!(
        hpa({
          scaleTargetRef: { kind: 'Deployment' },
          minReplicas: 5,
          maxReplicas: 2,
          metrics: [
            { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization' } } },
            { type: 'Pods', pods: { metric: { name: 'rps' }, target: { type: 'AverageValue', averageValue: '0' } } },
            { type: 'Memory' },
            {
              type: 'External',
              resource: { name: 'cpu' },
              external: { metric: { name: 'q' }, target: { type: 'Value', value: '10' } },
            },
          ],
          behavior: { scaleUp: { selectPolicy: 'Max', policies: [{ type: 'Pods', value: 0, periodSeconds: 3600 }] } },
        }),
      ),
    ),
    [
      'spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`',
      'spec.scaleTargetRef.name: Required value',
      'spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization',
      'spec.metrics[1].pods.target.averageValue: Invalid value: 0: must be positive',
      'spec.metrics[2].type: Unsupported value: "Memory": supported values: "ContainerResource", "External", "Object", "Pods", "Resource"',
      'spec.metrics[3].resource: Forbidden: must populate the given metric source only',
      'spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero',
      'spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 3600: must be less than or equal to 1800',
    ],
  );
  assert.deepEqual(
    messages(
      horizontalPodAutoscalerStrategy.validate!(
        hpa({ scaleTargetRef: { kind: 'Deployment', name: 'web' }, minReplicas: 0, maxReplicas: 0 }),
      ),
    ),
    [
      'spec.minReplicas: Invalid value: 0: must be greater than or equal to 1',
      'spec.maxReplicas: Invalid value: 0: must be greater than 0',
    ],
  );
});
