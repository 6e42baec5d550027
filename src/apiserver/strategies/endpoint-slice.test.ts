import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../kube-object.js';
import { endpointSliceStrategy } from './endpoint-slice.js';

function slice(fields: Record<string, unknown>): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'web-abc', namespace: 'default', labels: { 'kubernetes.io/service-name': 'web' } },
    ...fields,
  };
}

test('EndpointSlice: addressType required, from IPv4/IPv6/FQDN, immutable; endpoints need an address', () => {
  assert.deepEqual(
    endpointSliceStrategy.validate!(
      slice({
        addressType: 'IPv4',
        endpoints: [{ addresses: ['10.0.0.1'] }],
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      }),
    ),
    [],
  );
  const table: [Record<string, unknown>, [string, string][]][] = [
    [{}, [['addressType', 'Required value']]],
    [{ addressType: 'IPX' }, [['addressType', 'Unsupported value: "IPX": supported values: "FQDN", "IPv4", "IPv6"']]],
    [
      { addressType: 'IPv4', endpoints: [{ addresses: [] }] },
      [['endpoints[0].addresses', 'Required value: must contain at least 1 address']],
    ],
    [
      { addressType: 'IPv4', ports: [{ port: 0 }] },
      [['ports[0].port', 'Invalid value: 0: must be between 1 and 65535, inclusive']],
    ],
  ];
  for (const [fields, want] of table)
    assert.deepEqual(
      endpointSliceStrategy.validate!(slice(fields)).map((c) => [c.field, c.message]),
      want,
      JSON.stringify(fields),
    );
  assert.deepEqual(
    endpointSliceStrategy.validateUpdate!(slice({ addressType: 'IPv6' }), slice({ addressType: 'IPv4' })).map((c) => [
      c.field,
      c.message,
    ]),
    [['addressType', 'Invalid value: "IPv6": field is immutable']],
  );
});

test('EndpointSlice generation: 1 on create, bumped by endpoint or label changes, not by annotations', () => {
  const old = slice({ addressType: 'IPv4', endpoints: [{ addresses: ['10.0.0.1'] }] });
  endpointSliceStrategy.prepareForCreate!(old);
  assert.equal(old.metadata.generation, 1);
  const annotated = structuredClone(old);
  annotated.metadata.annotations = { a: 'b' };
  endpointSliceStrategy.prepareForUpdate!(annotated, old);
  assert.equal(annotated.metadata.generation, 1);
  const moved = slice({ addressType: 'IPv4', endpoints: [{ addresses: ['10.0.0.2'] }] });
  endpointSliceStrategy.prepareForUpdate!(moved, old);
  assert.equal(moved.metadata.generation, 2);
});

test('EndpointSlice: a port without a name or protocol is stored with "" and TCP, on create and update', () => {
  const created = slice({ addressType: 'IPv4', ports: [{ port: 80 }, { name: 'dns', port: 53, protocol: 'UDP' }] });
  endpointSliceStrategy.prepareForCreate!(created);
  assert.deepEqual(created.ports, [
    { port: 80, name: '', protocol: 'TCP' },
    { name: 'dns', port: 53, protocol: 'UDP' },
  ]);
  const updated = slice({ addressType: 'IPv4', ports: [{ port: 8080 }] });
  endpointSliceStrategy.prepareForUpdate!(updated, created);
  assert.deepEqual(updated.ports, [{ port: 8080, name: '', protocol: 'TCP' }]);
});
