import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Answer, RecordType } from 'dns-packet';
import type { V1EndpointSlice, V1Service, V1ServiceSpec } from '@kubernetes/client-node';
import { RCODE } from '../ztunnel/dns/dns-message.js';
import { ClusterDnsRecords, type ClusterDnsResult } from './cluster-dns-records.js';

/** 2024-01-01T00:00:00Z, the time of every change the zone is fed (the SOA serial). */
const T0 = 1_704_067_200_000;

const service = (name: string, namespace: string, spec: V1ServiceSpec): V1Service => ({
  metadata: { name, namespace },
  spec,
});

interface Ep {
  readonly ip: string;
  readonly hostname?: string;
  readonly ready?: boolean;
}

const slice = (
  name: string,
  namespace: string,
  svc: string,
  endpoints: readonly Ep[],
  ports: V1EndpointSlice['ports'] = [{ name: 'http', port: 8080, protocol: 'TCP' }],
): V1EndpointSlice => ({
  addressType: 'IPv4',
  metadata: { name, namespace, labels: { 'kubernetes.io/service-name': svc } },
  ports,
  endpoints: endpoints.map((e) => ({
    addresses: [e.ip],
    ...(e.hostname !== undefined ? { hostname: e.hostname } : {}),
    conditions: e.ready === undefined ? {} : { ready: e.ready },
  })),
});

/** The zone `cluster.local` with namespaces default and shop, and a few Services of each kind. */
function zone(o: { localIps?: string[]; synced?: boolean; now?: () => number } = {}): ClusterDnsRecords {
  const z = new ClusterDnsRecords({
    domain: 'cluster.local',
    ttl: 30,
    localIps: o.localIps ?? [],
    now: o.now ?? (() => T0),
  });
  for (const name of ['default', 'shop', 'kube-system']) z.setNamespace({ metadata: { name } });
  z.setService(
    service('web', 'shop', {
      clusterIP: '10.96.3.4',
      clusterIPs: ['10.96.3.4'],
      ports: [
        { name: 'http', port: 80, protocol: 'TCP' },
        { name: 'dns', port: 53, protocol: 'UDP' },
        { port: 9000, protocol: 'TCP' },
      ],
    }),
  );
  z.setEndpointSlice(slice('web-abc', 'shop', 'web', [{ ip: '10.244.1.5' }, { ip: '10.244.2.6', ready: false }]));
  z.setService(
    service('dual', 'shop', {
      clusterIPs: ['10.96.7.7', 'fd00:10:96::7'],
      clusterIP: '10.96.7.7',
      ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    }),
  );
  z.setService(service('db', 'shop', { clusterIP: 'None', clusterIPs: ['None'] }));
  z.setEndpointSlice(
    slice(
      'db-1',
      'shop',
      'db',
      [
        { ip: '10.244.1.10', hostname: 'db-0' },
        { ip: '10.244.2.11', hostname: 'db-1' },
        { ip: '10.244.2.12', ready: false, hostname: 'db-2' },
        { ip: '10.244.3.13' },
      ],
      [
        { name: 'pg', port: 5432, protocol: 'TCP' },
        { name: 'metrics', port: 9187, protocol: 'TCP' },
      ],
    ),
  );
  z.setService(service('empty', 'shop', { clusterIP: 'None', clusterIPs: ['None'] }));
  z.setService(service('portless', 'shop', { clusterIP: 'None', clusterIPs: ['None'] }));
  z.setEndpointSlice(slice('portless-1', 'shop', 'portless', [{ ip: '10.244.4.4' }], []));
  z.setService(service('ext', 'shop', { type: 'ExternalName', externalName: 'api.example.com' }));
  z.setService(service('alias', 'shop', { type: 'ExternalName', externalName: 'web.shop.svc.cluster.local' }));
  z.setService(service('alias-ext', 'shop', { type: 'ExternalName', externalName: 'ext.shop.svc.cluster.local' }));
  z.setService(
    service('kube-dns', 'kube-system', {
      clusterIP: '10.96.0.10',
      clusterIPs: ['10.96.0.10'],
      ports: [
        { name: 'dns', port: 53, protocol: 'UDP' },
        { name: 'dns-tcp', port: 53, protocol: 'TCP' },
      ],
    }),
  );
  z.setEndpointSlice(
    slice(
      'kube-dns-x',
      'kube-system',
      'kube-dns',
      [{ ip: '10.244.0.2' }],
      [{ name: 'dns', port: 53, protocol: 'UDP' }],
    ),
  );
  if (o.synced !== false) z.markSynced();
  return z;
}

const SOA: Answer = {
  type: 'SOA',
  name: 'cluster.local',
  ttl: 30,
  data: {
    mname: 'ns.dns.cluster.local',
    rname: 'hostmaster.cluster.local',
    serial: T0 / 1000,
    refresh: 7200,
    retry: 1800,
    expire: 86400,
    minimum: 30,
  },
};

/** Type 65, which dns-packet knows by number only. */
const HTTPS = 'UNKNOWN_65' as RecordType;

const ask = (z: ClusterDnsRecords, name: string, type: RecordType): ClusterDnsResult => z.answer({ name, type });

/** The answer of a result that is one, failing otherwise. */
function answered(r: ClusterDnsResult): Extract<ClusterDnsResult, { kind: 'answer' }>['answer'] {
  if (r.kind !== 'answer') assert.fail(`not an answer: ${JSON.stringify(r)}`);
  return r.answer;
}

/** The records' data, in the order given. */
const data = (answers: readonly Answer[]): unknown[] => answers.map((a) => ('data' in a ? a.data : undefined));
const sorted = (xs: unknown[]): unknown[] => [...xs].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

function assertNoData(r: ClusterDnsResult, soa: Answer = SOA): void {
  assert.deepEqual(answered(r), {
    rcode: RCODE.NOERROR,
    authoritative: true,
    answers: [],
    authorities: [soa],
    additionals: [],
  });
}

function assertNxDomain(r: ClusterDnsResult): void {
  assert.deepEqual(answered(r), {
    rcode: RCODE.NXDOMAIN,
    authoritative: true,
    answers: [],
    authorities: [SOA],
    additionals: [],
  });
}

test('a ClusterIP Service: A is its ClusterIP, authoritative, TTL 30; AAAA is NOERROR/NODATA with the SOA', () => {
  const z = zone();
  const a = answered(ask(z, 'web.shop.svc.cluster.local', 'A'));
  assert.equal(a.rcode, RCODE.NOERROR);
  assert.equal(a.authoritative, true);
  assert.deepEqual(a.answers, [{ type: 'A', name: 'web.shop.svc.cluster.local', ttl: 30, data: '10.96.3.4' }]);
  assertNoData(ask(z, 'web.shop.svc.cluster.local', 'AAAA'));
});

test('a dual-stack Service answers A with its IPv4 and AAAA with its IPv6 ClusterIP', () => {
  const z = zone();
  assert.deepEqual(data(answered(ask(z, 'dual.shop.svc.cluster.local', 'A')).answers), ['10.96.7.7']);
  assert.deepEqual(data(answered(ask(z, 'dual.shop.svc.cluster.local', 'AAAA')).answers), ['fd00:10:96::7']);
});

test("NXDOMAIN carries the plugin's SOA: ns.dns.<zone> hostmaster.<zone> <last change> 7200 1800 86400 <ttl>", () => {
  const z = zone();
  assertNxDomain(ask(z, 'nope.shop.svc.cluster.local', 'A'));
  assertNxDomain(ask(z, 'nope.shop.svc.cluster.local', 'AAAA'));
  // a Service in a namespace that does not exist, a name the schema has no place for, a port the Service lacks
  assertNxDomain(ask(z, 'web.ghost.svc.cluster.local', 'A'));
  assertNxDomain(ask(z, 'foo.cluster.local', 'A'));
  assertNxDomain(ask(z, 'a.b.c.web.shop.svc.cluster.local', 'A'));
  assertNxDomain(ask(z, '_grpc._tcp.web.shop.svc.cluster.local', 'SRV'));
  assertNxDomain(ask(z, 'ghost.svc.cluster.local', 'A'));
});

test('the zone, svc.<zone>, pod.<zone> and an existing namespace exist without records: NODATA', () => {
  const z = zone();
  for (const name of ['cluster.local', 'svc.cluster.local', 'pod.cluster.local', 'shop.svc.cluster.local'])
    assertNoData(ask(z, name, 'A'));
  // NS and SOA below the zone's apex, and any other type of an existing name
  assertNoData(ask(z, 'shop.svc.cluster.local', 'NS'));
  assertNoData(ask(z, 'web.shop.svc.cluster.local', 'SOA'));
  assertNoData(ask(z, 'web.shop.svc.cluster.local', 'MX'));
  assertNoData(ask(z, 'web.shop.svc.cluster.local', HTTPS));
  assertNxDomain(ask(z, 'nope.shop.svc.cluster.local', HTTPS));
});

test('until the informers synced, a name not found is SERVFAIL (with the SOA), not NXDOMAIN', () => {
  const z = zone({ synced: false });
  const a = answered(ask(z, 'nope.shop.svc.cluster.local', 'A'));
  assert.equal(a.rcode, RCODE.SERVFAIL);
  assert.deepEqual(a.authorities, [SOA]);
  assert.deepEqual(data(answered(ask(z, 'web.shop.svc.cluster.local', 'A')).answers), ['10.96.3.4']);
});

test('names compare case-insensitively; the answer keeps the query name as written, and the SOA its zone', () => {
  const z = zone();
  const a = answered(ask(z, 'WEB.Shop.SVC.Cluster.Local', 'A'));
  assert.deepEqual(a.answers, [{ type: 'A', name: 'WEB.Shop.SVC.Cluster.Local', ttl: 30, data: '10.96.3.4' }]);
  const nx = answered(ask(z, 'Nope.Shop.svc.CLUSTER.local', 'A'));
  assert.equal(nx.rcode, RCODE.NXDOMAIN);
  const soa = nx.authorities?.[0];
  assert.equal(soa?.name, 'CLUSTER.local');
  assert.deepEqual(soa !== undefined && 'data' in soa ? soa.data : undefined, {
    ...(SOA as { data: object }).data,
    mname: 'ns.dns.CLUSTER.local',
    rname: 'hostmaster.CLUSTER.local',
  });
  const srv = answered(ask(z, '_HTTP._Tcp.web.shop.svc.cluster.local', 'SRV'));
  assert.deepEqual(data(srv.answers), [{ priority: 0, weight: 100, port: 80, target: 'web.shop.svc.cluster.local' }]);
});

test('a headless Service: A is each ready endpoint; without ready endpoints the name is NXDOMAIN', () => {
  const z = zone();
  assert.deepEqual(sorted(data(answered(ask(z, 'db.shop.svc.cluster.local', 'A')).answers)), [
    '10.244.1.10',
    '10.244.2.11',
    '10.244.3.13',
  ]);
  assertNxDomain(ask(z, 'empty.shop.svc.cluster.local', 'A'));
  // no ports: still addresses
  assert.deepEqual(data(answered(ask(z, 'portless.shop.svc.cluster.local', 'A')).answers), ['10.244.4.4']);
});

test('an endpoint by its hostname (a StatefulSet pod) or by its dashed address; a not-ready one does not exist', () => {
  const z = zone();
  assert.deepEqual(answered(ask(z, 'db-0.db.shop.svc.cluster.local', 'A')).answers, [
    { type: 'A', name: 'db-0.db.shop.svc.cluster.local', ttl: 30, data: '10.244.1.10' },
  ]);
  assert.deepEqual(data(answered(ask(z, '10-244-3-13.db.shop.svc.cluster.local', 'A')).answers), ['10.244.3.13']);
  // an endpoint with a hostname is not named by its address
  assertNxDomain(ask(z, '10-244-1-10.db.shop.svc.cluster.local', 'A'));
  assertNxDomain(ask(z, 'db-2.db.shop.svc.cluster.local', 'A'));
  // endpoint names of a ClusterIP Service too
  assert.deepEqual(data(answered(ask(z, '10-244-1-5.web.shop.svc.cluster.local', 'A')).answers), ['10.244.1.5']);
  assertNxDomain(ask(z, '10-244-2-6.web.shop.svc.cluster.local', 'A'));
});

test('an IPv6 endpoint is named by its address with dashes, a trailing one completed with 0', () => {
  const z = zone();
  z.setService(service('v6', 'shop', { clusterIP: 'None', clusterIPs: ['None'] }));
  z.setEndpointSlice(slice('v6-1', 'shop', 'v6', [{ ip: 'fd00::1' }, { ip: 'fd00:1::' }]));
  assert.deepEqual(data(answered(ask(z, 'fd00--1.v6.shop.svc.cluster.local', 'AAAA')).answers), ['fd00::1']);
  assert.deepEqual(data(answered(ask(z, 'fd00-1--0.v6.shop.svc.cluster.local', 'AAAA')).answers), ['fd00:1::']);
  assertNoData(ask(z, 'fd00--1.v6.shop.svc.cluster.local', 'A'));
});

test("SRV of a ClusterIP Service's named port targets the Service's name, with its A record as additional", () => {
  const z = zone();
  const a = answered(ask(z, '_http._tcp.web.shop.svc.cluster.local', 'SRV'));
  assert.deepEqual(a.answers, [
    {
      type: 'SRV',
      name: '_http._tcp.web.shop.svc.cluster.local',
      ttl: 30,
      data: { priority: 0, weight: 100, port: 80, target: 'web.shop.svc.cluster.local' },
    },
  ]);
  assert.deepEqual(a.additionals, [{ type: 'A', name: 'web.shop.svc.cluster.local', ttl: 30, data: '10.96.3.4' }]);
  assert.deepEqual(data(answered(ask(z, '_dns._udp.web.shop.svc.cluster.local', 'SRV')).answers), [
    { priority: 0, weight: 100, port: 53, target: 'web.shop.svc.cluster.local' },
  ]);
  // the protocol must match too
  assertNxDomain(ask(z, '_dns._tcp.web.shop.svc.cluster.local', 'SRV'));
  // without _port._proto: every port (the unnamed one too), the weight split between them
  assert.deepEqual(sorted(data(answered(ask(z, 'web.shop.svc.cluster.local', 'SRV')).answers)), [
    { priority: 0, weight: 33, port: 53, target: 'web.shop.svc.cluster.local' },
    { priority: 0, weight: 33, port: 80, target: 'web.shop.svc.cluster.local' },
    { priority: 0, weight: 33, port: 9000, target: 'web.shop.svc.cluster.local' },
  ]);
  // the SRV name has the Service's A records too
  assert.deepEqual(data(answered(ask(z, '_http._tcp.web.shop.svc.cluster.local', 'A')).answers), ['10.96.3.4']);
});

test('SRV of a headless Service: one per ready endpoint, targeting its name, with its address as additional', () => {
  const z = zone();
  const a = answered(ask(z, '_pg._tcp.db.shop.svc.cluster.local', 'SRV'));
  assert.deepEqual(sorted(data(a.answers)), [
    { priority: 0, weight: 33, port: 5432, target: '10-244-3-13.db.shop.svc.cluster.local' },
    { priority: 0, weight: 33, port: 5432, target: 'db-0.db.shop.svc.cluster.local' },
    { priority: 0, weight: 33, port: 5432, target: 'db-1.db.shop.svc.cluster.local' },
  ]);
  assert.deepEqual(sorted(a.additionals.map((r) => [r.name, 'data' in r ? r.data : undefined])), [
    ['10-244-3-13.db.shop.svc.cluster.local', '10.244.3.13'],
    ['db-0.db.shop.svc.cluster.local', '10.244.1.10'],
    ['db-1.db.shop.svc.cluster.local', '10.244.2.11'],
  ]);
  // no ports: the name exists, but has no SRV records
  assertNoData(ask(z, 'portless.shop.svc.cluster.local', 'SRV'));
  // every port of every endpoint
  assert.equal(answered(ask(z, 'db.shop.svc.cluster.local', 'SRV')).answers.length, 6);
});

test('ExternalName: CNAME to the external name; A is completed upstream; SRV and subdomains are not its', () => {
  const z = zone();
  assert.deepEqual(answered(ask(z, 'ext.shop.svc.cluster.local', 'CNAME')).answers, [
    { type: 'CNAME', name: 'ext.shop.svc.cluster.local', ttl: 30, data: 'api.example.com' },
  ]);
  const r = ask(z, 'ext.shop.svc.cluster.local', 'A');
  assert.deepEqual(r, {
    kind: 'external',
    chain: [{ type: 'CNAME', name: 'ext.shop.svc.cluster.local', ttl: 30, data: 'api.example.com' }],
    target: { name: 'api.example.com', type: 'A', class: 'IN' },
    unresolved: { rcode: RCODE.NOERROR, authoritative: true, answers: [], authorities: [SOA], additionals: [] },
  });
  assertNoData(ask(z, 'ext.shop.svc.cluster.local', 'SRV'));
  assertNoData(ask(z, 'ext.shop.svc.cluster.local', 'TXT'));
  assertNxDomain(ask(z, '_http._tcp.ext.shop.svc.cluster.local', 'SRV'));
  assertNxDomain(ask(z, 'x.ext.shop.svc.cluster.local', 'CNAME'));
  // a ClusterIP Service has no CNAME
  assertNoData(ask(z, 'web.shop.svc.cluster.local', 'CNAME'));
});

test('an ExternalName naming a cluster name is followed in the zone: the CNAME, then its target records', () => {
  const z = zone();
  assert.deepEqual(answered(ask(z, 'alias.shop.svc.cluster.local', 'A')).answers, [
    { type: 'CNAME', name: 'alias.shop.svc.cluster.local', ttl: 30, data: 'web.shop.svc.cluster.local' },
    { type: 'A', name: 'web.shop.svc.cluster.local', ttl: 30, data: '10.96.3.4' },
  ]);
  // a target without records of the type: no CNAME either
  assertNoData(ask(z, 'alias.shop.svc.cluster.local', 'AAAA'));
  // a chain leaving the zone at its end
  const r = ask(z, 'alias-ext.shop.svc.cluster.local', 'AAAA');
  assert.equal(r.kind, 'external');
  if (r.kind !== 'external') return;
  assert.deepEqual(data([...r.chain]), ['ext.shop.svc.cluster.local', 'api.example.com']);
  assert.deepEqual(r.target, { name: 'api.example.com', type: 'AAAA', class: 'IN' });
  // a loop ends
  z.setService(service('loop', 'shop', { type: 'ExternalName', externalName: 'loop2.shop.svc.cluster.local' }));
  z.setService(service('loop2', 'shop', { type: 'ExternalName', externalName: 'loop.shop.svc.cluster.local' }));
  assertNoData(ask(z, 'loop.shop.svc.cluster.local', 'A'));
});

test('PTR of a ClusterIP is the Service; of an endpoint address its endpoint name; else the query goes upstream', () => {
  const z = zone();
  assert.deepEqual(answered(ask(z, '4.3.96.10.in-addr.arpa', 'PTR')).answers, [
    { type: 'PTR', name: '4.3.96.10.in-addr.arpa', ttl: 30, data: 'web.shop.svc.cluster.local' },
  ]);
  assert.deepEqual(data(answered(ask(z, '10.1.244.10.in-addr.arpa', 'PTR')).answers), [
    'db-0.db.shop.svc.cluster.local',
  ]);
  assert.deepEqual(data(answered(ask(z, '13.3.244.10.In-Addr.Arpa', 'PTR')).answers), [
    '10-244-3-13.db.shop.svc.cluster.local',
  ]);
  const v6 = 'fd000010009600000000000000000007'.split('').reverse().join('.');
  assert.deepEqual(data(answered(ask(z, `${v6}.ip6.arpa`, 'PTR')).answers), ['dual.shop.svc.cluster.local']);
  // misses in the reverse zones fall through to the upstream servers
  assert.deepEqual(ask(z, '9.9.9.9.in-addr.arpa', 'PTR'), { kind: 'forward' });
  assert.deepEqual(ask(z, '12.2.244.10.in-addr.arpa', 'PTR'), { kind: 'forward' });
  assert.deepEqual(ask(z, '96.10.in-addr.arpa', 'PTR'), { kind: 'forward' });
  assert.deepEqual(ask(z, '4.3.96.10.in-addr.arpa', 'A'), { kind: 'forward' });
  // a forward name has no PTR
  assertNoData(ask(z, 'web.shop.svc.cluster.local', 'PTR'));
});

test('pods insecure: <a-b-c-d>.<ns>.pod.<zone> is the address it spells, in a namespace that exists', () => {
  const z = zone();
  assert.deepEqual(answered(ask(z, '1-2-3-4.default.pod.cluster.local', 'A')).answers, [
    { type: 'A', name: '1-2-3-4.default.pod.cluster.local', ttl: 30, data: '1.2.3.4' },
  ]);
  assert.deepEqual(data(answered(ask(z, 'fd00--5.shop.pod.cluster.local', 'AAAA')).answers), ['fd00::5']);
  assertNoData(ask(z, '1-2-3-4.default.pod.cluster.local', 'AAAA'));
  assertNoData(ask(z, 'default.pod.cluster.local', 'A'));
  assertNxDomain(ask(z, '1-2-3-400.default.pod.cluster.local', 'A'));
  assertNxDomain(ask(z, 'web.default.pod.cluster.local', 'A'));
  assertNxDomain(ask(z, '1-2-3-4.ghost.pod.cluster.local', 'A'));
});

test('dns-version.<zone> is TXT 1.1.0 (TTL 28800); TXT of another existing name is NODATA, else NXDOMAIN', () => {
  const z = zone();
  assert.deepEqual(answered(ask(z, 'dns-version.cluster.local', 'TXT')).answers, [
    { type: 'TXT', name: 'dns-version.cluster.local', ttl: 28800, data: '1.1.0' },
  ]);
  assertNoData(ask(z, 'web.shop.svc.cluster.local', 'TXT'));
  assertNxDomain(ask(z, 'nope.shop.svc.cluster.local', 'TXT'));
  assertNxDomain(ask(z, 'svc.cluster.local', 'TXT'));
});

test("the zone's SOA and NS; ns.dns.<zone> is this server's address, or kube-dns's ClusterIP when it is its endpoint", () => {
  const alone = zone({ localIps: ['192.168.5.5'] });
  assert.deepEqual(answered(ask(alone, 'cluster.local', 'SOA')).answers, [SOA]);
  assert.deepEqual(answered(ask(alone, 'ns.dns.cluster.local', 'A')).answers, [
    { type: 'A', name: 'ns.dns.cluster.local', ttl: 30, data: '192.168.5.5' },
  ]);
  assertNoData(ask(alone, 'ns.dns.cluster.local', 'AAAA'));
  const ns = answered(ask(alone, 'cluster.local', 'NS'));
  assert.deepEqual(ns.answers, [{ type: 'NS', name: 'cluster.local', ttl: 30, data: 'ns.dns.cluster.local' }]);
  assert.deepEqual(ns.additionals, [{ type: 'A', name: 'ns.dns.cluster.local', ttl: 30, data: '192.168.5.5' }]);

  const inCluster = zone({ localIps: ['10.244.0.2'] });
  assert.deepEqual(data(answered(ask(inCluster, 'ns.dns.cluster.local', 'A')).answers), ['10.96.0.10']);
  const ns2 = answered(ask(inCluster, 'cluster.local', 'NS'));
  assert.deepEqual(data(ns2.answers), ['kube-dns.kube-system.svc.cluster.local']);
  assert.deepEqual(ns2.additionals, [
    { type: 'A', name: 'kube-dns.kube-system.svc.cluster.local', ttl: 30, data: '10.96.0.10' },
  ]);
  // dns.<zone> itself is no name of the schema
  assertNxDomain(ask(inCluster, 'dns.cluster.local', 'A'));
  // the reverse zones have their own SOA
  const rev = answered(ask(inCluster, 'in-addr.arpa', 'SOA')).answers[0];
  assert.equal(rev?.name, 'in-addr.arpa');
  assert.equal(rev !== undefined && 'data' in rev ? (rev.data as { mname: string }).mname : '', 'ns.dns.in-addr.arpa');
});

test('zone transfers are REFUSED; names outside the zones go upstream', () => {
  const z = zone();
  assert.equal(answered(ask(z, 'cluster.local', 'AXFR')).rcode, RCODE.REFUSED);
  assert.deepEqual(ask(z, 'example.com', 'A'), { kind: 'forward' });
  assert.deepEqual(ask(z, 'local', 'SOA'), { kind: 'forward' });
  assert.deepEqual(ask(z, 'notcluster.local', 'A'), { kind: 'forward' });
  assert.deepEqual(z.answer({ name: '.', type: 'NS' }), { kind: 'forward' });
});

test('the SOA serial is the Unix time of the last change a record shows, not of every informer event', () => {
  let now = T0;
  const z = zone({ now: () => now });
  const serial = (): unknown => {
    const soa = answered(ask(z, 'cluster.local', 'SOA')).answers[0];
    return soa !== undefined && 'data' in soa ? (soa.data as { serial: number }).serial : undefined;
  };
  assert.equal(serial(), T0 / 1000);
  now += 60_000;
  // the same Service again (a resync, a status change): no new serial
  z.setService(
    service('kube-dns', 'kube-system', {
      clusterIP: '10.96.0.10',
      clusterIPs: ['10.96.0.10'],
      ports: [
        { name: 'dns', port: 53, protocol: 'UDP' },
        { name: 'dns-tcp', port: 53, protocol: 'TCP' },
      ],
    }),
  );
  assert.equal(serial(), T0 / 1000);
  z.deleteService(service('web', 'shop', {}));
  assert.equal(serial(), T0 / 1000 + 60);
});
