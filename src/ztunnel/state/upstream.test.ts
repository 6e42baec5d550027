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
  const u = resolveUpstream(s, s.workloadByUid('c')!, '127.0.2.1', 7000, '127.0.1.1');
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
    const u = resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.1', 80, '127.0.1.1', () => (i % 100) / 100);
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
  assert.deepEqual(resolveUpstream(s, s.workloadByUid('c')!, '127.0.9.9', 80, '127.0.1.1'), {
    kind: 'passthrough',
    ip: '127.0.9.9',
    port: 80,
    service: undefined,
  });
  const pt = resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.3', 80, '127.0.1.1');
  assert.equal(pt.kind, 'passthrough');
});

test('a known service with no endpoint fails instead of passing through', () => {
  const s = state(MESH);
  assert.throws(
    () => resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.2', 80, '127.0.1.1'),
    (e) => isMeshError(e, 'ZT_ERR_NO_HEALTHY_UPSTREAM'),
  );
});

test('a service port the service does not define fails', () => {
  const s = state(MESH);
  assert.throws(
    () => resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.1', 81, '127.0.1.1'),
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
  const u = resolveUpstream(s, s.workloadByUid('c')!, '10.96.9.9', 5432, '127.0.1.1');
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
  assert.equal(resolveUpstream(s, s.workloadByUid('c')!, '127.0.3.1', 8080, '127.0.1.1').kind, 'passthrough');
  const viaService = resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.4', 80, '127.0.1.1');
  assert.equal(viaService.kind, 'workload');
  if (viaService.kind !== 'workload') return;
  assert.equal(viaService.workload.uid, 'h');
  assert.equal(viaService.ip, '127.0.3.1');
});

/**
 * c calls; s1 (backing svc.b) has a workload waypoint named by address, svc.b a service waypoint named by hostname.
 * The waypoint wp-0 (sa waypoint) backs waypoint.b, which has the HBONE port 15008; wp-1 is unhealthy.
 */
const WAYPOINTS = `
workloads:
- {uid: c, name: c, namespace: a, workloadIps: [127.0.1.1], protocol: HBONE, node: n1}
- uid: s1
  name: s1
  namespace: b
  serviceAccount: sa1
  workloadIps: [127.0.2.1]
  protocol: HBONE
  waypoint: {destination: /10.96.0.9, hboneMtlsPort: 15008}
  services: {b/svc.b: {80: 8080}}
- {uid: plain, name: plain, namespace: b, workloadIps: [127.0.2.2], protocol: HBONE, services: {b/plain.b: {80: 8080}}}
- {uid: wp-0, name: wp-0, namespace: b, serviceAccount: waypoint, workloadIps: [127.0.4.1], protocol: HBONE, services: {b/waypoint.b: {15008: 15008}}}
- {uid: wp-1, name: wp-1, namespace: b, serviceAccount: waypoint, workloadIps: [127.0.4.2], protocol: HBONE, status: Unhealthy, services: {b/waypoint.b: {15008: 15008}}}
services:
- name: svc
  namespace: b
  hostname: svc.b
  vips: [/10.96.0.1]
  ports: {80: 8080}
  waypoint: {destination: {namespace: b, hostname: waypoint.b}, hboneMtlsPort: 15008}
- {name: plain, namespace: b, hostname: plain.b, vips: [/10.96.0.2], ports: {80: 8080}}
- {name: waypoint, namespace: b, hostname: waypoint.b, vips: [/10.96.0.9], ports: {15008: 15008}, subjectAltNames: ["spiffe://cluster.local/ns/b/sa/waypoint-extra"]}
- name: lost
  namespace: b
  hostname: lost.b
  vips: [/10.96.0.3]
  ports: {80: 8080}
  waypoint: {destination: {namespace: b, hostname: gone.b}, hboneMtlsPort: 15008}
`;

test('a service with a waypoint: HBONE to a healthy waypoint pod on its HBONE port, CONNECT to the VIP the app dialled', () => {
  const s = state(WAYPOINTS);
  const u = resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.1', 80, '127.0.1.1');
  assert.ok(u.kind === 'waypoint');
  assert.equal(u.workload.uid, 'wp-0');
  assert.equal(u.ip, '127.0.4.1');
  assert.equal(u.port, 15008);
  assert.equal(u.target, '10.96.0.1:80');
  assert.equal(u.service?.hostname, 'svc.b');
  assert.deepEqual([...u.expectedIdentities].sort(), [
    'spiffe://cluster.local/ns/b/sa/waypoint',
    'spiffe://cluster.local/ns/b/sa/waypoint-extra',
  ]);
});

test('a workload with a waypoint, dialled by its own IP, goes to the waypoint named by address; a service without one does not', () => {
  const s = state(WAYPOINTS);
  const u = resolveUpstream(s, s.workloadByUid('c')!, '127.0.2.1', 8080, '127.0.1.1');
  assert.ok(u.kind === 'waypoint');
  assert.equal(u.workload.uid, 'wp-0');
  assert.equal(u.target, '127.0.2.1:8080');
  assert.equal(u.service, undefined);
  const plain = resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.2', 80, '127.0.1.1');
  assert.equal(plain.kind, 'workload');
});

test("the waypoint's own connection to the workload it fronts goes to the workload, not back to the waypoint", () => {
  const s = state(WAYPOINTS);
  const u = resolveUpstream(s, s.workloadByUid('wp-0')!, '127.0.2.1', 8080, '127.0.4.1');
  assert.ok(u.kind === 'workload');
  assert.equal(u.workload.uid, 's1');
  // Its identity alone is not enough: from another address it is not the waypoint.
  const other = resolveUpstream(s, s.workloadByUid('wp-0')!, '127.0.2.1', 8080, '127.0.9.9');
  assert.equal(other.kind, 'waypoint');
});

test('fail closed: a waypoint that is unknown, or has no healthy endpoint, fails the connection instead of bypassing it', () => {
  const s = state(WAYPOINTS);
  assert.throws(
    () => resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.3', 80, '127.0.1.1'),
    (e) => isMeshError(e) && e.code === 'ZT_ERR_UNKNOWN_WAYPOINT' && /b\/gone\.b not found/.test(e.message),
  );
  s.update({ removedWorkloads: ['wp-0'] });
  assert.throws(
    () => resolveUpstream(s, s.workloadByUid('c')!, '10.96.0.1', 80, '127.0.1.1'),
    (e) => isMeshError(e) && e.code === 'ZT_ERR_UNKNOWN_WAYPOINT' && /no healthy endpoint/.test(e.message),
  );
});
