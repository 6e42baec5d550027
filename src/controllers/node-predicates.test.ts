import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Node, V1PodSpec } from '@kubernetes/client-node';
import { unfit } from './node-predicates.js';

const node = (extra: Partial<V1Node> = {}): V1Node => ({
  metadata: { name: 'node1', labels: { zone: 'a', cores: '8' } },
  status: { conditions: [{ type: 'Ready', status: 'True' }] },
  ...extra,
});
const affinity = (term: object): V1PodSpec => ({
  containers: [],
  affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [term] } } },
});

test("required node affinity: matchFields on the node's name and matchExpressions on its labels, each operator", () => {
  const table: [object, boolean][] = [
    [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node1'] }] }, true],
    [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node2'] }] }, false],
    [{ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['b'] }] }, true],
    [{ matchExpressions: [{ key: 'gpu', operator: 'Exists' }] }, false],
    [{ matchExpressions: [{ key: 'gpu', operator: 'DoesNotExist' }] }, true],
    [{ matchExpressions: [{ key: 'cores', operator: 'Gt', values: ['4'] }] }, true],
    [{ matchExpressions: [{ key: 'cores', operator: 'Lt', values: ['4'] }] }, false],
    [{}, false],
  ];
  for (const [term, fits] of table)
    assert.equal(unfit(node(), affinity(term)) === undefined, fits, JSON.stringify(term));
});

test('a cordoned or unready node takes only pods that tolerate its implied taint; other taints need a toleration too', () => {
  const cordoned = node({ spec: { unschedulable: true } });
  assert.equal(unfit(cordoned, { containers: [] }), 'node(s) were unschedulable');
  const tolerateAll = { containers: [], tolerations: [{ operator: 'Exists' }] };
  assert.equal(unfit(cordoned, tolerateAll), undefined);
  const notReady = node({ status: { conditions: [{ type: 'Ready', status: 'False' }] } });
  assert.equal(unfit(notReady, { containers: [] }), 'node(s) were not ready');
  assert.equal(
    unfit(notReady, {
      containers: [],
      tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' }],
    }),
    undefined,
  );
  const tainted = node({ spec: { taints: [{ key: 'dedicated', value: 'infra', effect: 'NoSchedule' }] } });
  assert.equal(unfit(tainted, { containers: [] }), 'node(s) had untolerated taint(s)');
  assert.equal(unfit(tainted, { containers: [], tolerations: [{ key: 'dedicated', value: 'infra' }] }), undefined);
});
