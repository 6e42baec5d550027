import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseLocalConfig } from './local-config.js';
import { ProxyState } from './proxy-state.js';
import { resolveUpstream } from './upstream.js';
import { isMeshError } from '../../lib/errors.js';

function state(yaml: string): ProxyState {
  const s = new ProxyState();
  s.apply(parseLocalConfig('m.yaml', yaml));
  return s;
}

const MESH = `
workloads:
- {uid: c, name: c, namespace: a, workloadIps: [127.0.1.1], protocol: HBONE, node: n1}
- uid: s1
  name: s1
  namespace: b
  serviceAccount: sa1
  workloadIps: [127.0.2.1]
  protocol: HBONE
  capacity: 3
  services: {b/svc.b: {80: 8080}}
- uid: s2
  name: s2
  namespace: b
  workloadIps: [127.0.2.2]
  protocol: TCP
  services: {b/svc.b: {80: 9090}}
- {uid: u, name: u, namespace: b, workloadIps: [127.0.2.3], status: Unhealthy, services: {b/svc.b: {80: 8080}}}
services:
- {name: svc, namespace: b, hostname: svc.b, vips: [/10.96.0.1], ports: {80: 8080}, subjectAltNames: ["spiffe://cluster.local/ns/b/sa/extra"]}
- {name: empty, namespace: b, hostname: empty.b, vips: [/10.96.0.2], ports: {80: 8080}}
- {name: pt, namespace: b, hostname: pt.b, vips: [/10.96.0.3], ports: {80: 8080}, loadBalancer: {mode: Passthrough, routingPreferences: [], healthPolicy: OnlyHealthy}}
`;

test('a workload IP resolves to that workload, same port, HBONE by its protocol', () => {
  const s = state(MESH);
  const u = resolveUpstream(s, s.workloadByUid('c')!, '127.0.2.1', 7000);
  assert.equal(u.kind, 'workload');
  if (u.kind !== 'workload') return;
  assert.equal(u.protocol, 'HBONE');
  assert.equal(u.ip, '127.0.2.1');
  assert.equal(u.targetPort, 7000);
  assert.deepEqual(u.expectedIdentities, ['spiffe://cluster.local/ns/b/sa/sa1']);
});

test('a service VIP maps the port per endpoint, skips unhealthy endpoints and weighs by capacity', () => {
  const s = state(MESH);
  const counts = new Map<string, number>();
  let i = 0;
  for (; i < 400; i++) {
    const u = resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.1', 80, () => (i % 100) / 100);
    assert.equal(u.kind, 'workload');
    if (u.kind !== 'workload') return;
    counts.set(u.workload.uid, (counts.get(u.workload.uid) ?? 0) + 1);
    assert.equal(u.targetPort, u.workload.uid === 's1' ? 8080 : 9090);
    if (u.workload.uid === 's1')
      assert.deepEqual([...u.expectedIdentities].sort(), [
        'spiffe://cluster.local/ns/b/sa/extra',
        'spiffe://cluster.local/ns/b/sa/sa1',
      ]);
  }
  assert.equal(counts.get('u'), undefined, 'unhealthy endpoint never picked');
  assert.equal(counts.get('s1'), 300, 'capacity 3 vs 1');
  assert.equal(counts.get('s2'), 100);
});

test('unknown destinations pass through; Passthrough services keep the original destination', () => {
  const s = state(MESH);
  assert.deepEqual(resolveUpstream(s, s.workloadByUid('c')!, '127.0.9.9', 80), {
    kind: 'passthrough',
    ip: '127.0.9.9',
    port: 80,
    service: undefined,
  });
  const pt = resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.3', 80);
  assert.equal(pt.kind, 'passthrough');
});

test('a known service with no endpoint fails instead of passing through', () => {
  const s = state(MESH);
  assert.throws(
    () => resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.2', 80),
    (e) => isMeshError(e, 'ZT_ERR_NO_HEALTHY_UPSTREAM'),
  );
});

test('a service port the service does not define fails', () => {
  const s = state(MESH);
  assert.throws(
    () => resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.1', 81),
    (e) => isMeshError(e, 'ZT_ERR_SERVICE_PORT'),
  );
});

test('a hostname-only endpoint is chosen with ip "" for the caller to resolve by DNS', () => {
  const s = state(`
workloads:
- {uid: c, name: c, namespace: a, workloadIps: [127.0.1.1], node: n1}
- {uid: h, name: h, namespace: b, hostname: db.example.internal, services: {b/db.b: {5432: 6432}}}
services:
- {name: db, namespace: b, hostname: db.b, vips: [/10.96.9.9], ports: {5432: 5432}}
`);
  const u = resolveUpstream(s, s.workloadByUid('c')!, '10.96.9.9', 5432);
  assert.ok(u.kind === 'workload');
  assert.equal(u.ip, '');
  assert.equal(u.workload.hostname, 'db.example.internal');
  assert.equal(u.targetPort, 6432);
});

test("a host-network pod's IP is its node's: outbound to it passes through, and its Service still reaches it", () => {
  const s = state(`
workloads:
- {uid: c, name: c, namespace: a, workloadIps: [127.0.1.1], protocol: HBONE, node: n1}
- {uid: h, name: h, namespace: b, workloadIps: [127.0.3.1], protocol: HBONE, networkMode: HostNetwork, services: {b/h.b: {80: 8080}}}
services:
- {name: h, namespace: b, hostname: h.b, vips: [/10.96.0.4], ports: {80: 8080}}
`);
  assert.equal(resolveUpstream(s, s.workloadByUid('c')!, '127.0.3.1', 8080).kind, 'passthrough');
  const viaService = resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.4', 80);
  assert.equal(viaService.kind, 'workload');
  if (viaService.kind !== 'workload') return;
  assert.equal(viaService.workload.uid, 'h');
  assert.equal(viaService.ip, '127.0.3.1');
});
