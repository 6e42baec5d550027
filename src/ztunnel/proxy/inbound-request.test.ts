import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError, type ErrorCode } from '../../lib/errors.js';
import { parseLocalConfig } from '../state/local-config.js';
import { ProxyState } from '../state/proxy-state.js';
import type { ResponseFlags } from '../admin/metrics.js';
import {
  buildInboundRequest,
  type InboundPeer,
  type InboundRefusal,
  type InboundRequest,
  type RequestParts,
} from './inbound-request.js';
import { LocalWorkloadInformation } from './local-workload.js';
import { trafficLabels } from '../admin/metrics.js';

const WEB = 'Kubernetes//Pod/shop/web-0';
const SVC = (name: string): string => `${name}.shop.svc.cluster.local`;

/**
 * web-0 (10.0.0.1 and fd00::1) backs `web` (80 → 8080, 7 → 15006), `named` (80 → a named port, 8443 on web-0)
 * and `admin` (9000 → 9090); `other` has port 80 too but web-0 does not back it. A policy denies port 9999 and a
 * dry-run one would deny 8080. The client is client-0 (10.0.0.9). wp-0 (10.0.0.5) is the waypoint behind the
 * `waypoint` service: `bound` (10.96.1.1) names that service as its waypoint, db-0 (10.0.0.6) names wp-0 by
 * address, and `unbound` (10.96.1.2) has none.
 */
function mesh(): ProxyState {
  const state = new ProxyState();
  state.apply(
    parseLocalConfig(
      'mesh.yaml',
      `
workloads:
- uid: ${WEB}
  name: web-0
  namespace: shop
  serviceAccount: web
  workloadIps: [10.0.0.1, "fd00::1"]
  node: n1
  services:
    shop/${SVC('web')}: {80: 8080, 7: 15006}
    shop/${SVC('named')}: {80: 8443}
    shop/${SVC('admin')}: {9000: 9090}
- {name: client-0, namespace: front, serviceAccount: client, workloadIps: [10.0.0.9], node: n2}
- {name: wp-0, namespace: shop, serviceAccount: waypoint, workloadIps: [10.0.0.5], node: n1, services: {shop/${SVC('waypoint')}: {15008: 15008}}}
- {name: db-0, namespace: shop, workloadIps: [10.0.0.6], node: n2, waypoint: {destination: /10.0.0.5}, services: {shop/${SVC('bound')}: {80: 8080}}}
services:
- {name: waypoint, namespace: shop, hostname: ${SVC('waypoint')}, vips: [/10.96.1.9], ports: {15008: 15008}}
- {name: bound, namespace: shop, hostname: ${SVC('bound')}, vips: [/10.96.1.1], ports: {80: 8080}, waypoint: {destination: {namespace: shop, hostname: ${SVC('waypoint')}}}}
- {name: unbound, namespace: shop, hostname: ${SVC('unbound')}, vips: [/10.96.1.2], ports: {80: 8080}}
- {name: web, namespace: shop, hostname: ${SVC('web')}, ports: {80: 8080, 7: 15006}}
- {name: named, namespace: shop, hostname: ${SVC('named')}, ports: {80: 0}}
- {name: admin, namespace: shop, hostname: ${SVC('admin')}, ports: {9000: 9090}}
- {name: other, namespace: shop, hostname: ${SVC('other')}, ports: {80: 8080}}
policies:
- {name: no-9999, namespace: shop, scope: Namespace, action: Deny, dryRun: false, rules: [[[{destinationPorts: [9999]}]]]}
- {name: maybe-8080, namespace: shop, scope: Namespace, action: Deny, dryRun: true, rules: [[[{destinationPorts: [8080]}]]]}
`,
    ),
  );
  return state;
}

const peer: InboundPeer = {
  identity: { trustDomain: 'cluster.local', namespace: 'front', serviceAccount: 'client' },
  addr: '10.0.0.9:40000',
  ip: '10.0.0.9',
  localIp: '10.0.0.1',
};

function decide(
  authority: string | undefined,
  o: {
    method?: string;
    fields?: RequestParts['fields'];
    peer?: Partial<InboundPeer>;
    uid?: string;
    baggage?: boolean;
  } = {},
): InboundRequest | InboundRefusal {
  const state = mesh();
  const head = { method: o.method ?? 'CONNECT', authority, fields: o.fields ?? [] };
  const local = LocalWorkloadInformation.byUid(state, o.uid ?? WEB);
  return buildInboundRequest(head, { ...peer, ...o.peer }, local, state, {
    network: '',
    enableResponseBaggage: o.baggage ?? true,
  });
}

function served(d: InboundRequest | InboundRefusal): InboundRequest {
  if (!d.ok) assert.fail(`refused: ${d.status} ${d.error.message}`);
  return d;
}

function refused(
  d: InboundRequest | InboundRefusal,
  status: number,
  flags: ResponseFlags,
  code: ErrorCode,
): InboundRefusal {
  if (d.ok) assert.fail(`served ${JSON.stringify(d.upstream)}`);
  assert.equal(d.status, status);
  assert.equal(d.flags, flags);
  assert.ok(isMeshError(d.error, code), `${d.error.code}: ${d.error.message}`);
  return d;
}

test('a CONNECT to the IP it arrived on reaches the app on the port it names, from the peer, as the peer', () => {
  const d = served(decide('10.0.0.1:8080'));
  assert.deepEqual(d.upstream, { ip: '10.0.0.1', port: 8080 });
  assert.equal(d.destination.uid, WEB);
  const { parties, rbac, ...addrs } = d.info;
  assert.deepEqual(rbac, { srcIp: '10.0.0.9', dstIp: '10.0.0.1', dstPort: 8080, srcIdentity: peer.identity });
  assert.deepEqual(addrs, {
    direction: 'inbound',
    workloadUid: WEB,
    src: '10.0.0.9:40000',
    originalDst: '10.0.0.1:8080',
    actualDst: '10.0.0.1:15008',
    hboneAddr: '10.0.0.1:8080',
    protocol: 'HBONE',
  });
  assert.equal(parties.reporter, 'destination');
  assert.equal(parties.source?.name, 'client-0', 'the source workload is found by the peer IP');
  assert.equal(parties.sourceIdentity, peer.identity);
  assert.equal(parties.destination?.uid, WEB);
  assert.equal(parties.mtls, true);
});

test('telemetry names the service whose target port the CONNECT reaches (ztunnel guess_inbound_service)', () => {
  assert.equal(served(decide('10.0.0.1:8080')).info.parties.destinationService?.hostname, SVC('web'));
  assert.equal(served(decide('10.0.0.1:9090')).info.parties.destinationService?.hostname, SVC('admin'));
  assert.equal(served(decide('10.0.0.1:5000')).info.parties.destinationService, undefined);
});

test('Forwarded host= names the service only when this workload backs it', () => {
  const fwd = (host: string): RequestParts['fields'] => [['forwarded', `for="10.0.0.9:40000";host=${host}`]];
  const named = decide('10.0.0.1:8080', { fields: fwd(SVC('admin')) });
  assert.equal(served(named).info.parties.destinationService?.hostname, SVC('admin'));
  const foreign = decide('10.0.0.1:8080', { fields: fwd(SVC('other')) });
  assert.equal(served(foreign).info.parties.destinationService?.hostname, SVC('web'), 'falls back to the guess');
});

test('a CONNECT to a service hostname maps the service port to the target port, the endpoint port first', () => {
  const web = served(decide(`${SVC('web')}:80`));
  assert.deepEqual(web.upstream, { ip: '10.0.0.1', port: 8080 });
  assert.equal(web.info.parties.destinationService?.hostname, SVC('web'));
  assert.equal(web.info.rbac?.dstPort, 8080, 'policy sees the application port');
  assert.equal(web.info.hboneAddr, `${SVC('web')}:80`);
  const named = served(decide(`${SVC('named')}:80`));
  assert.deepEqual(named.upstream, { ip: '10.0.0.1', port: 8443 }, "a named port resolves through web-0's endpoint");
});

test('a method other than CONNECT is answered 400 and not counted as a connection', () => {
  const d = refused(decide('10.0.0.1:8080', { method: 'GET' }), 400, '-', 'ZT_ERR_HBONE_BAD_REQUEST');
  assert.equal(d.built, false);
  assert.match(d.error.message, /method GET is not CONNECT/);
});

test('an authority that is not host:port is answered 400', () => {
  for (const authority of ['10.0.0.1', 'web:0', 'web:65536', '[fd00::1]', 'a b:80', undefined]) {
    refused(decide(authority), 400, '-', 'ZT_ERR_HBONE_BAD_REQUEST');
  }
});

test('a CONNECT to another IP than the one it arrived on is answered 400 (ztunnel validate_destination)', () => {
  const other = refused(decide('10.0.0.2:8080'), 400, '-', 'ZT_ERR_HBONE_IP_MISMATCH');
  assert.match(other.error.message, /10\.0\.0\.2 is not the IP this connection arrived on \(10\.0\.0\.1\)/);
  // A dual-stack workload is reached on each family's own listener, never across them.
  refused(decide('[fd00::1]:8080'), 400, '-', 'ZT_ERR_HBONE_IP_MISMATCH');
  served(decide('[fd00::1]:8080', { peer: { localIp: 'fd00::1' } }));
});

test('a waypoint receives CONNECTs to the service or workload bound to it, on the port named, and no others', () => {
  const WP = 'Kubernetes//Pod/shop/wp-0';
  const atWaypoint = { uid: WP, peer: { localIp: '10.0.0.5' } };
  const viaService = served(decide('10.96.1.1:80', atWaypoint));
  assert.deepEqual(viaService.upstream, { ip: '10.0.0.5', port: 80 });
  assert.equal(viaService.destination.uid, WP);
  served(decide('10.0.0.6:8080', atWaypoint));
  const notBound = refused(decide('10.96.1.2:80', atWaypoint), 400, '-', 'ZT_ERR_HBONE_IP_MISMATCH');
  assert.match(notBound.error.message, /nor bound to it as its waypoint/);
  // web-0 is not the waypoint of `bound`: the exception is only for the waypoint itself.
  refused(decide('10.96.1.1:80'), 400, '-', 'ZT_ERR_HBONE_IP_MISMATCH');
});

test('a local workload no longer known is answered 503', () => {
  refused(decide('10.0.0.1:8080', { uid: 'Kubernetes//Pod/shop/gone' }), 503, 'CONNECT', 'ZT_ERR_UNKNOWN_WORKLOAD');
});

test('a hostname with no service, or a service without that port, is answered 503', () => {
  const none = refused(decide('nowhere.shop.svc.cluster.local:80'), 503, 'CONNECT', 'ZT_ERR_SERVICE_PORT');
  assert.equal(none.info.parties.destinationService, undefined);
  const noPort = refused(decide(`${SVC('web')}:81`), 503, 'CONNECT', 'ZT_ERR_SERVICE_PORT');
  assert.equal(noPort.info.parties.destinationService?.hostname, SVC('web'), 'counted against the service named');
  // A named target port this workload's endpoint does not define reaches nothing either.
  refused(decide(`${SVC('named')}:81`), 503, 'CONNECT', 'ZT_ERR_SERVICE_PORT');
});

test("ztunnel's own ports are answered 503, directly or through a service port", () => {
  for (const port of [15001, 15006, 15008]) refused(decide(`10.0.0.1:${port}`), 503, 'CONNECT', 'ZT_ERR_SELF_CALL');
  const viaService = refused(decide(`${SVC('web')}:7`), 503, 'CONNECT', 'ZT_ERR_SELF_CALL');
  assert.equal(viaService.info.parties.destinationService?.hostname, SVC('web'));
  assert.equal(viaService.built, false);
});

test('a policy DENY is answered 401, after the connection was built, with the decision to log', () => {
  const d = refused(decide('10.0.0.1:9999'), 401, 'DENY', 'ZT_ERR_POLICY_DENIED');
  assert.equal(d.built, true);
  assert.equal(d.policy?.allowed, false);
  assert.match(d.error.message, /shop\/no-9999/);
  assert.equal(d.info.rbac?.dstPort, 9999);
});

test("a dry-run policy's note rides on an allowed decision; refusals before policy carry none", () => {
  const d = served(decide('10.0.0.1:8080'));
  assert.equal(d.policy.allowed, true);
  assert.equal(d.policy.dryRunNotes.length, 1);
  assert.match(d.policy.dryRunNotes[0]!, /maybe-8080/);
  assert.equal(refused(decide('10.0.0.2:8080'), 400, '-', 'ZT_ERR_HBONE_IP_MISMATCH').policy, undefined);
});

test("a source the state does not know by its IP is reported by its CONNECT's baggage; a known one by the state", () => {
  const fields: RequestParts['fields'] = [
    ['baggage', 'k8s.cluster.name=east,k8s.namespace.name=front,k8s.deployment.name=client'],
    ['baggage', 'service.name=client-svc,service.version=v2,cloud.region=eu-west1,cloud.availability_zone=eu-west1-b'],
  ];
  const labels = (d: InboundRequest | InboundRefusal) => trafficLabels(d.info.parties, '-');
  const unknownPeer = { ip: '10.0.0.50', addr: '10.0.0.50:40000' };
  assert.deepEqual(pick(labels(served(decide('10.0.0.1:8080', { fields, peer: unknownPeer })))), {
    source_workload: 'client',
    source_canonical_service: 'client-svc',
    source_canonical_revision: 'v2',
    source_workload_namespace: 'front',
    source_app: 'client',
    source_version: 'v2',
    source_cluster: 'east',
    source_principal: 'spiffe://cluster.local/ns/front/sa/client',
    source_region: 'eu-west1',
    source_zone: 'eu-west1-b',
  });
  const known = pick(labels(served(decide('10.0.0.1:8080', { fields }))));
  assert.equal(known.source_workload, 'client-0');
  assert.equal(known.source_cluster, 'Kubernetes');
  assert.equal(known.source_region, 'unknown');
  const off = pick(labels(served(decide('10.0.0.1:8080', { fields, peer: unknownPeer, baggage: false }))));
  assert.equal(off.source_workload, 'unknown', 'ENABLE_RESPONSE_BAGGAGE=false: baggage is not read');
  assert.equal(off.source_workload_namespace, 'unknown');
  const none = pick(labels(served(decide('10.0.0.1:8080', { peer: unknownPeer }))));
  assert.equal(none.source_workload_namespace, 'unknown', "not the identity's namespace, as ztunnel's derived source");
  assert.equal(none.source_principal, 'spiffe://cluster.local/ns/front/sa/client');
});

function pick(l: ReturnType<typeof trafficLabels>): Record<string, string | undefined> {
  const keys = [
    'source_workload',
    'source_canonical_service',
    'source_canonical_revision',
    'source_workload_namespace',
    'source_app',
    'source_version',
    'source_cluster',
    'source_principal',
    'source_region',
    'source_zone',
  ] as const;
  return Object.fromEntries(keys.map((k) => [k, l[k]]));
}
