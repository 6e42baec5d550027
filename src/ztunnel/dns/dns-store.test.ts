import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProxyState } from '../state/proxy-state.js';
import { hostService, kubeService, podWorkload } from '../../../test/helpers/dns-state.js';
import { DnsStore, type AddressType, type DnsClient, type DnsLookup } from './dns-store.js';
import { hasDomain, labelsOf, nameOf, trimDomain, wildcardsOf } from './dns-name.js';

const NS1 = 'ns1';
const NS2 = 'ns2';
const NW1 = 'nw1';
const NW2 = 'nw2';
const CLIENT: DnsClient = {
  name: 'client',
  namespace: NS1,
  network: NW1,
  canonicalName: 'client',
  canonicalRevision: 'v1',
};

/** ztunnel's own test state (`src/dns/server.rs` tests), in amesh's service shape. */
function state(): ProxyState {
  const s = new ProxyState();
  s.update({
    services: [
      hostService('www.google.com', NS1, [`${NW1}/1.1.1.1`]),
      kubeService('productpage', NS1, [`${NW1}/9.9.9.9`]),
      kubeService('example', NS2, [`${NW1}/10.10.10.10`]),
      kubeService('nslocal', NS2, [`${NW1}/10.10.10.240`], { visibility: 'Namespace' }),
      kubeService('nslocalsame', NS1, [`${NW1}/10.10.10.241`], { visibility: 'Namespace' }),
      hostService('everywhere.io', NS2, [`${NW1}/10.10.10.110`]),
      hostService('preferred.io', NS2, [`${NW1}/10.10.10.210`]),
      hostService('everywhere.io', 'preferred-ns', [`${NW1}/10.10.10.111`]),
      hostService('preferred.io', 'preferred-ns', [`${NW1}/10.10.10.211`]),
      hostService('everywhere.io', NS1, [`${NW1}/10.10.10.112`]),
      hostService('canonical.svc', NS2, [`${NW1}/10.10.10.140`]),
      hostService('canonical.svc', 'ns3', [`${NW1}/10.10.10.141`], { canonical: true }),
      hostService('canonical.with.local', NS1, [`${NW1}/10.10.10.150`]),
      hostService('canonical.with.local', NS2, [`${NW1}/10.10.10.151`], { canonical: true }),
      kubeService(
        'details',
        NS2,
        ['11.11.11.11', '12.12.12.12'].map((ip) => `${NW1}/${ip}`),
        { hostname: 'details.ns2.svc.cluster.remote' },
      ),
      hostService('ipv4.localhost', NS1, [`${NW1}/2.2.2.2`]),
      hostService('ipv6.localhost', NS1, [`${NW1}/2001:db8::ff00:42:8329`]),
      hostService('dual.localhost', NS1, [`${NW1}/2.2.2.2`, `${NW1}/2001:db8::ff00:42:8329`]),
      hostService('*.wildcard', NS1, [`${NW1}/10.10.10.10`]),
      hostService('*.b.wildcard', NS1, [`${NW1}/11.11.11.11`]),
      hostService('*.svc.mesh.company.net', NS1, [`${NW1}/10.1.2.3`]),
      kubeService('nw2-only', NS1, [`${NW2}/20.20.20.20`]),
      kubeService('both-networks', NS1, [`${NW1}/21.21.21.21`, `${NW2}/22.22.22.22`]),
      kubeService('headless', NS1, []),
      hostService('headless.example.com', NS1, []),
      kubeService('headless-ipv6', NS1, [], { ipFamilies: 'IPv6' }),
    ],
    workloads: [
      podWorkload('headless0', NS1, NW1, ['30.30.30.30', '2001:db8::30'], [`${NS1}/headless.${NS1}.svc.cluster.local`]),
      podWorkload('headless1', NS1, NW1, ['31.31.31.31', '2001:db8::31'], [`${NS1}/headless.${NS1}.svc.cluster.local`]),
      podWorkload('headless-external', NS1, NW1, ['32.32.32.32'], [`${NS1}/headless.example.com`]),
      podWorkload(
        'headless2',
        NS1,
        NW1,
        ['33.33.33.33', '2001:db8::33'],
        [`${NS1}/headless-ipv6.${NS1}.svc.cluster.local`],
      ),
    ],
  });
  return s;
}

const store = new DnsStore(state(), { preferredServiceNamespace: 'preferred-ns' });

/** Records as `name TYPE data`, addresses sorted (ztunnel shuffles them). */
function answers(host: string, type: AddressType = 'A', client = CLIENT): string[] | 'forward' {
  const r: DnsLookup = store.lookup(client, host, type);
  if (r.kind === 'forward') return 'forward';
  const cname = r.answers.filter((a) => a.type === 'CNAME').map((a) => `${a.name} CNAME ${a.data}`);
  const ips = r.answers
    .filter((a) => a.type !== 'CNAME')
    .map((a) => `${a.name} ${a.type} ${a.data}`)
    .sort();
  for (const a of r.answers) assert.equal(a.ttl, 30);
  return [...cname, ...ips];
}

test('name_util: has_domain and trim_domain compare whole labels and leave something', () => {
  const domain = labelsOf('svc.cluster.local');
  assert.ok(hasDomain(labelsOf('name.ns.svc.cluster.local'), domain));
  assert.ok(!hasDomain(labelsOf('name.ns.a.different.domain'), domain));
  assert.ok(!hasDomain(labelsOf('cluster.com'), domain));
  assert.deepEqual(trimDomain(labelsOf('name.ns.svc.cluster.local'), domain), ['name', 'ns']);
  assert.equal(trimDomain(labelsOf('svc.cluster.local'), domain), undefined);
  assert.ok(hasDomain(labelsOf('Name.NS.SVC.Cluster.Local.'), domain), 'labels compare case-insensitively');
});

test('get_wildcards: the name itself, then each wildcard of decreasing specificity', () => {
  assert.deepEqual(wildcardsOf(labelsOf('svc1.')).map(nameOf), ['svc1']);
  assert.deepEqual(wildcardsOf(labelsOf('svc1.ns1.svc.cluster.local.')).map(nameOf), [
    'svc1.ns1.svc.cluster.local',
    '*.ns1.svc.cluster.local',
    '*.svc.cluster.local',
    '*.cluster.local',
    '*.local',
  ]);
});

test('to_kube_fqdns: only the expansions the number of labels allows', () => {
  const nsd = labelsOf('ns1.svc.cluster.local');
  const cases: [string, string[]][] = [
    ['name', ['name.ns1.svc.cluster.local']],
    ['name.', ['name.ns1.svc.cluster.local']],
    ['name.ns2', ['name.ns2.svc.cluster.local', 'name.ns2.ns1.svc.cluster.local']],
    ['name.ns2.svc.', ['name.ns2.svc.cluster.local', 'name.ns2.svc.svc.cluster.local']],
    ['name.ns2.not-svc.', ['name.ns2.not-svc.svc.cluster.local']],
    ['pod.sub-domain.ns.svc', ['pod.sub-domain.ns.svc.cluster.local']],
    ['pod.sub-domain.ns.not-svc', []],
    ['name.ns2.svc.cluster.', []],
    ['name.ns2.svc.cluster.local', []],
    ['www.google.com.', ['www.google.com.svc.cluster.local']],
  ];
  for (const [host, want] of cases) assert.deepEqual(store.kubeFqdns(labelsOf(host), nsd).map(nameOf), want, host);
});

test('search domains: per pod, from its namespace and the cluster domain (ztunnel shared mode)', () => {
  assert.deepEqual(store.searchDomains('default-ns').map(nameOf), [
    'default-ns.svc.cluster.local',
    'svc.cluster.local',
    'cluster.local',
  ]);
  const custom = new DnsStore(new ProxyState(), { clusterDomain: 'corp.example' });
  assert.deepEqual(custom.searchDomains('a').map(nameOf), ['a.svc.corp.example', 'svc.corp.example', 'corp.example']);
});

test('a Service resolves from its namespace as svc, svc.ns, svc.ns.svc and the FQDN, named as asked', () => {
  assert.deepEqual(answers('productpage.'), ['productpage A 9.9.9.9']);
  assert.deepEqual(answers('productpage.ns1.'), ['productpage.ns1 A 9.9.9.9']);
  assert.deepEqual(answers('productpage.ns1.svc'), ['productpage.ns1.svc A 9.9.9.9']);
  assert.deepEqual(answers('productpage.ns1.svc.cluster.local.'), ['productpage.ns1.svc.cluster.local A 9.9.9.9']);
  assert.deepEqual(
    answers('ProductPage.NS1.svc.cluster.local'),
    ['ProductPage.NS1.svc.cluster.local A 9.9.9.9'],
    'case-insensitive, spelled as asked',
  );
});

test('a Service in another namespace resolves as svc.ns and svc.ns.svc, but its short name is forwarded', () => {
  assert.deepEqual(answers('example.ns2.'), ['example.ns2 A 10.10.10.10']);
  assert.deepEqual(answers('example.ns2.svc.'), ['example.ns2.svc A 10.10.10.10']);
  assert.deepEqual(answers('example.ns2.svc.cluster.local.'), ['example.ns2.svc.cluster.local A 10.10.10.10']);
  assert.equal(answers('example.'), 'forward');
  assert.deepEqual(
    answers('example.', 'A', { ...CLIENT, namespace: NS2 }),
    ['example A 10.10.10.10'],
    'the short name follows the client namespace',
  );
});

test('a name found by stripping a search domain answers a CNAME to the stripped name, then its addresses', () => {
  assert.deepEqual(answers('productpage.ns1.ns1.svc.cluster.local.'), [
    'productpage.ns1.ns1.svc.cluster.local CNAME productpage.ns1',
    'productpage.ns1 A 9.9.9.9',
  ]);
  assert.deepEqual(answers('www.google.com.ns1.svc.cluster.local.'), [
    'www.google.com.ns1.svc.cluster.local CNAME www.google.com',
    'www.google.com A 1.1.1.1',
  ]);
  assert.deepEqual(answers('www.google.com'), ['www.google.com A 1.1.1.1'], 'a ServiceEntry host resolves as is');
});

test('a known host without records of the asked family is NOERROR with no records, not forwarded', () => {
  assert.deepEqual(answers('productpage.ns1.ns1.svc.cluster.local.', 'AAAA'), []);
  assert.deepEqual(answers('ipv6.localhost.'), []);
  assert.deepEqual(answers('ipv4.localhost.', 'AAAA'), []);
  assert.deepEqual(answers('dual.localhost.'), ['dual.localhost A 2.2.2.2']);
  assert.deepEqual(answers('dual.localhost.', 'AAAA'), ['dual.localhost AAAA 2001:db8::ff00:42:8329']);
  const noV6 = new DnsStore(state(), { ipv6Enabled: false });
  assert.deepEqual(
    noV6.lookup(CLIENT, 'dual.localhost', 'AAAA'),
    { kind: 'answer', answers: [] },
    'IPV6_ENABLED=false: no AAAA',
  );
});

test('only VIPs on the client network are answered', () => {
  assert.deepEqual(answers('nw2-only.ns1.svc.cluster.local.'), []);
  assert.deepEqual(answers('both-networks.ns1.svc.cluster.local.'), [
    'both-networks.ns1.svc.cluster.local A 21.21.21.21',
  ]);
});

test('a namespace-scoped ServiceEntry is forwarded for other namespaces and resolves in its own', () => {
  assert.equal(answers('nslocal.ns2.svc.cluster.local.'), 'forward');
  assert.deepEqual(answers('nslocalsame.ns1.svc.cluster.local.'), ['nslocalsame.ns1.svc.cluster.local A 10.10.10.241']);
});

test('wildcard hosts match the most specific wildcard, also below a search domain, with no CNAME', () => {
  assert.deepEqual(answers('foo.wildcard.'), ['foo.wildcard A 10.10.10.10']);
  assert.deepEqual(answers('a.b.wildcard.'), ['a.b.wildcard A 11.11.11.11']);
  assert.deepEqual(answers('foo.svc.mesh.company.net.'), ['foo.svc.mesh.company.net A 10.1.2.3']);
  assert.deepEqual(answers('foo.foons.svc.mesh.company.net.'), ['foo.foons.svc.mesh.company.net A 10.1.2.3']);
  assert.deepEqual(answers('foo.svc.mesh.company.net.ns1.svc.cluster.local.'), [
    'foo.svc.mesh.company.net.ns1.svc.cluster.local A 10.1.2.3',
  ]);
});

test('a headless Service answers one address per endpoint of the family; a ServiceEntry without addresses is forwarded', () => {
  assert.deepEqual(answers('headless.ns1.svc.cluster.local.'), [
    'headless.ns1.svc.cluster.local A 30.30.30.30',
    'headless.ns1.svc.cluster.local A 31.31.31.31',
  ]);
  assert.deepEqual(answers('headless.ns1.svc.cluster.local.', 'AAAA'), [
    'headless.ns1.svc.cluster.local AAAA 2001:db8::30',
    'headless.ns1.svc.cluster.local AAAA 2001:db8::31',
  ]);
  assert.deepEqual(answers('headless-ipv6.ns1.svc.cluster.local.', 'AAAA'), [
    'headless-ipv6.ns1.svc.cluster.local AAAA 2001:db8::33',
  ]);
  assert.deepEqual(answers('headless-ipv6.ns1.svc.cluster.local.'), []);
  assert.equal(answers('headless.example.com'), 'forward');
  assert.equal(
    answers('headless.pod0.ns1.svc.cluster.local.'),
    'forward',
    'pod hostnames are not served (ztunnel #1119)',
  );
});

test('services sharing a hostname: the client namespace, then canonical, then the preferred namespace', () => {
  assert.deepEqual(answers('everywhere.io.'), ['everywhere.io A 10.10.10.112']);
  assert.deepEqual(answers('preferred.io.'), ['preferred.io A 10.10.10.211']);
  assert.deepEqual(answers('canonical.svc'), ['canonical.svc A 10.10.10.141']);
  assert.deepEqual(answers('canonical.with.local'), ['canonical.with.local A 10.10.10.150']);
});

test('names outside the mesh and other cluster domains are forwarded', () => {
  assert.equal(answers('www.bing.com'), 'forward');
  assert.deepEqual(answers('details.ns2.svc.cluster.remote.'), [
    'details.ns2.svc.cluster.remote A 11.11.11.11',
    'details.ns2.svc.cluster.remote A 12.12.12.12',
  ]);
  assert.equal(answers('details.ns2.'), 'forward');
});

test('a custom cluster domain expands short names into it', () => {
  const s = new ProxyState();
  s.update({ services: [kubeService('api', 'shop', ['/10.0.0.7'], { hostname: 'api.shop.svc.corp.example' })] });
  const corp = new DnsStore(s, { clusterDomain: 'corp.example' });
  const client = { ...CLIENT, namespace: 'shop', network: '' };
  for (const host of ['api', 'api.shop', 'api.shop.svc', 'api.shop.svc.corp.example']) {
    const r = corp.lookup(client, host, 'A');
    assert.deepEqual(r.kind === 'answer' ? r.answers.map((a) => a.data) : r.kind, ['10.0.0.7'], host);
  }
  assert.equal(corp.lookup(client, 'api.shop.svc.cluster.local', 'A').kind, 'forward');
});
