import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gatewayShape, routeShape } from '../model/gateway-listeners.js';
import { listenerStatuses } from './listener-status.js';

const gw = gatewayShape('ingress', 'gw', {
  gatewayClassName: 'istio',
  listeners: [
    { name: 'http', port: 80, protocol: 'HTTP' },
    { name: 'tls', port: 9443, protocol: 'TLS', hostname: '*.db.test', tls: { mode: 'Passthrough' } },
    { name: 'tcp', port: 5432, protocol: 'TCP' },
  ],
});
const noSecret = (): undefined => undefined;

test('attachedRoutes counts TLSRoutes on a TLS listener and TCPRoutes on a TCP listener, each where its kind is allowed', () => {
  const routes = [
    routeShape('TLSRoute', 'ingress', 'pg', { parentRefs: [{ name: 'gw' }], hostnames: ['pg.db.test'] }),
    routeShape('TLSRoute', 'ingress', 'elsewhere', { parentRefs: [{ name: 'gw' }], hostnames: ['pg.other.test'] }),
    routeShape('TCPRoute', 'ingress', 'raw', { parentRefs: [{ name: 'gw', sectionName: 'tcp' }] }),
    routeShape('TCPRoute', 'ingress', 'any', { parentRefs: [{ name: 'gw' }] }),
    routeShape('HTTPRoute', 'ingress', 'web', { parentRefs: [{ name: 'gw' }] }),
  ];
  const statuses = listenerStatuses(gw, routes, [], new Map(), noSecret);
  assert.deepEqual(
    statuses.map((l) => [l.name, l.attachedRoutes, l.supportedKinds.map((k) => k.kind)]),
    [
      ['http', 1, ['HTTPRoute', 'GRPCRoute']],
      ['tls', 1, ['TLSRoute']],
      ['tcp', 2, ['TCPRoute']],
    ],
  );
});

test('a TLS listener in Terminate mode supports TLSRoutes and TCPRoutes, and without a usable certificate is not programmed', () => {
  const g = gatewayShape('ingress', 'gw', {
    gatewayClassName: 'istio',
    listeners: [
      { name: 'term', port: 9443, protocol: 'TLS', tls: { certificateRefs: [{ name: 'db-cert' }] } },
      { name: 'bare', port: 9444, protocol: 'TLS' },
    ],
  });
  const routes = [routeShape('TCPRoute', 'ingress', 'raw', { parentRefs: [{ name: 'gw', sectionName: 'term' }] })];
  const [term, bare] = listenerStatuses(g, routes, [], new Map(), noSecret);
  assert.deepEqual([term!.attachedRoutes, term!.supportedKinds.map((k) => k.kind)], [1, ['TLSRoute', 'TCPRoute']]);
  const condition = (l: typeof term, type: string): unknown =>
    l!.conditions.filter((c) => c.type === type).map((c) => [c.status, c.reason, c.message]);
  assert.deepEqual(condition(term, 'ResolvedRefs'), [
    ['False', 'InvalidCertificateRef', 'invalid certificate reference //db-cert., secret ingress/db-cert not found'],
  ]);
  assert.deepEqual(condition(bare, 'ResolvedRefs'), [
    ['False', 'InvalidCertificateRef', 'a TLS listener in Terminate mode needs a certificateRef'],
  ]);
  assert.deepEqual(condition(bare, 'Accepted'), [['True', 'Accepted', 'No errors found']]);
});
