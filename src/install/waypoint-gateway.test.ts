import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { listRows, statusRows, waypointGateway, type ListedGateway } from './waypoint-gateway.js';

const gw = (
  ns: string,
  name: string,
  o: { cls?: string; labels?: Record<string, string>; programmed?: boolean } = {},
) =>
  ({
    metadata: { name, namespace: ns, labels: o.labels ?? {} },
    spec: { gatewayClassName: o.cls ?? 'istio-waypoint' },
    status: {
      conditions: [
        { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Resource accepted' },
        { type: 'Programmed', status: o.programmed === false ? 'False' : 'True', reason: 'Programmed', message: 'ok' },
      ],
    },
  }) satisfies ListedGateway;

test("istioctl's refusals: the reserved name none, and a traffic type that is not all, none, service or workload", () => {
  assert.throws(
    () => waypointGateway({ name: 'none', namespace: 'a' }),
    (e) => isMeshError(e) && /reserved/.test(e.message),
  );
  assert.throws(
    () => waypointGateway({ name: 'w', namespace: 'a', for: 'pods' }),
    (e) => isMeshError(e) && /Valid options are: \[all none service workload\]/.test(e.message),
  );
  assert.deepEqual(waypointGateway({ name: 'w', namespace: 'a', revision: 'canary' }).metadata.labels, {
    'istio.io/rev': 'canary',
  });
});

test('list: only istio-waypoint Gateways, by namespace then name; an unlabelled one shows traffic type none and revision default', () => {
  const gws = [
    gw('b', 'w'),
    gw('a', 'z', { programmed: false }),
    gw('a', 'ingress', { cls: 'istio' }),
    gw('a', 'x', { labels: { 'istio.io/waypoint-for': 'all', 'istio.io/rev': 'canary' } }),
  ];
  assert.deepEqual(listRows(gws, true), {
    headers: ['NAMESPACE', 'NAME', 'REVISION', 'TRAFFIC TYPE', 'PROGRAMMED'],
    rows: [
      ['a', 'x', 'canary', 'all', 'True'],
      ['a', 'z', 'default', 'none', 'False'],
      ['b', 'w', 'default', 'none', 'True'],
    ],
  });
  assert.deepEqual(statusRows([gw('a', 'x')], false).rows, [
    ['x', 'True', 'Accepted', 'Accepted', 'Resource accepted'],
    ['x', 'True', 'Programmed', 'Programmed', 'ok'],
  ]);
});
