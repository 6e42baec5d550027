import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveBackend } from './http-routes.js';
import { grantShape, referenceGranted } from './reference-grants.js';

const SERVICES = new Map([['payments/api', new Set([8080])]]);
const grant = grantShape('payments', {
  from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'shop' }],
  to: [{ group: '', kind: 'Service', name: 'api' }],
});

test('a ReferenceGrant opens its namespace to the kinds and namespaces it names, for the objects it names', () => {
  const from = { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'shop' };
  const api = { group: '', kind: 'Service', namespace: 'payments', name: 'api' };
  assert.equal(referenceGranted([grant], from, api), true);
  assert.equal(referenceGranted([grant], { ...from, kind: 'GRPCRoute' }, api), false, 'another kind');
  assert.equal(referenceGranted([grant], { ...from, namespace: 'web' }, api), false, 'another namespace');
  assert.equal(referenceGranted([grant], from, { ...api, name: 'db' }), false, 'another Service');
});

test('a backendRef to another namespace resolves only with a ReferenceGrant there; without one its share is 500', () => {
  const ref = { name: 'api', namespace: 'payments', port: 8080 };
  const warnings: string[] = [];
  const route = (grants: (typeof grant)[]) => ({ kind: 'HTTPRoute', namespace: 'shop', grants });
  assert.deepEqual(
    resolveBackend(ref, route([grant]), SERVICES, 'cluster.local', (w) => warnings.push(w)),
    {
      namespace: 'payments',
      hostname: 'api.payments.svc.cluster.local',
      port: 8080,
      weight: 1,
    },
  );
  assert.equal(warnings.length, 0);
  assert.equal(resolveBackend(ref, route([]), SERVICES, 'cluster.local', (w) => warnings.push(w)).hostname, '');
  assert.match(warnings[0]!, /needs a ReferenceGrant/);
});
