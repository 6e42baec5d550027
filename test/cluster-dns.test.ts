/**
 * The cluster DNS server (`amesh cluster-dns`, CoreDNS's part on a kubeadm cluster) on real sockets (127.114.0.0/16),
 * fed by the embedded API server, asked by BIND's dig (an independent resolver client) and forwarding to dnsmasq
 * (an independent upstream). Raw dns-packet exchanges check what dig does not send: malformed messages.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { decode, encode, RECURSION_DESIRED } from 'dns-packet';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { isMeshError } from '../src/lib/errors.js';
import { ameshCommand } from '../src/up/amesh-command.js';
import { ClusterDns } from '../src/up/cluster-dns.js';
import { clusterDnsObjects } from '../src/up/cluster-dns-manifest.js';
import { CapturedLogs, silentLogs } from './helpers/captured-logs.js';
import { dig, digSkip } from './helpers/dig.js';
import { dnsmasqSkip, startDnsmasq } from './helpers/dnsmasq.js';
import { freePorts } from './helpers/free-port.js';
import { startApiServer } from './helpers/in-process.js';
import { printedLine } from './helpers/printed-line.js';
import { udpExchange } from './helpers/udp-exchange.js';

const DNS_IP = '127.114.0.1';
const CLI_IP = '127.114.0.2';
const DOWN_IP = '127.114.0.3';
const UPSTREAM_IP = '127.114.0.53';
const NS = 'shop';
/** Endpoints of the big headless Service: more A records than a 512-byte UDP answer holds. */
const BIG_ENDPOINTS = 60;

const skip = digSkip() || dnsmasqSkip();

/** The SOA every negative answer of the zone carries, but for its serial (the last change's Unix time). */
const soaOf = (serial: string): string[] => [
  'cluster.local.',
  '30',
  'IN',
  'SOA',
  'ns.dns.cluster.local.',
  'hostmaster.cluster.local.',
  serial,
  '7200',
  '1800',
  '86400',
  '30',
];

const slice = (
  name: string,
  service: string,
  endpoints: { ip: string; hostname?: string; ready?: boolean }[],
  ports: k8s.DiscoveryV1EndpointPort[],
): k8s.V1EndpointSlice => ({
  metadata: { name, labels: { 'kubernetes.io/service-name': service } },
  addressType: 'IPv4',
  ports,
  endpoints: endpoints.map((e) => ({
    addresses: [e.ip],
    ...(e.hostname !== undefined ? { hostname: e.hostname } : {}),
    conditions: { ready: e.ready ?? true },
  })),
});

/** An upstream for names outside the cluster: dnsmasq on UPSTREAM_IP. */
async function upstream(dir: string): Promise<{ p: ChildProcess; port: number }> {
  const [port = 0] = await freePorts(UPSTREAM_IP, 1);
  const p = await startDnsmasq(dir, UPSTREAM_IP, port, {
    hosts: ['192.0.2.10 api.partner.example', '198.51.100.7 www.example'],
  });
  return { p, port };
}

describe('cluster DNS server', { skip }, () => {
  let dir: string;
  let api: ApiServer;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let discovery: k8s.DiscoveryV1Api;
  let dnsmasq: ChildProcess;
  let upstreamPort: number;
  let dns: ClusterDns;
  let port: number;
  let webIp: string;
  const logs = new CapturedLogs('cluster-dns', 'debug');
  const ask = (...args: string[]): ReturnType<typeof dig> => dig(DNS_IP, port, ...args);

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-cluster-dns-'));
    api = await startApiServer(path.join(dir, 'data'));
    kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
    ({ p: dnsmasq, port: upstreamPort } = await upstream(dir));

    await core.createNamespace({ body: { metadata: { name: NS } } });
    const web = await core.createNamespacedService({
      namespace: NS,
      body: {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
      },
    });
    webIp = web.spec?.clusterIP ?? '';
    await discovery.createNamespacedEndpointSlice({
      namespace: NS,
      body: slice('web-1', 'web', [{ ip: '10.244.1.5' }], [{ name: 'http', port: 8080, protocol: 'TCP' }]),
    });
    await core.createNamespacedService({
      namespace: NS,
      body: {
        metadata: { name: 'db' },
        spec: { clusterIP: 'None', selector: { app: 'db' }, ports: [{ name: 'pg', port: 5432 }] },
      },
    });
    await discovery.createNamespacedEndpointSlice({
      namespace: NS,
      body: slice(
        'db-1',
        'db',
        [
          { ip: '10.244.1.10', hostname: 'db-0' },
          { ip: '10.244.2.11', hostname: 'db-1' },
          { ip: '10.244.2.12', hostname: 'db-2', ready: false },
        ],
        [{ name: 'pg', port: 5432, protocol: 'TCP' }],
      ),
    });
    await core.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'partner' }, spec: { type: 'ExternalName', externalName: 'api.partner.example' } },
    });
    await core.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'big' }, spec: { clusterIP: 'None', selector: { app: 'big' }, ports: [{ port: 80 }] } },
    });
    await discovery.createNamespacedEndpointSlice({
      namespace: NS,
      body: slice(
        'big-1',
        'big',
        Array.from({ length: BIG_ENDPOINTS }, (_, i) => ({ ip: `10.244.9.${i + 1}` })),
        [{ port: 80, protocol: 'TCP' }],
      ),
    });
    // kube-dns as `amesh up` will apply it: its explicit ClusterIP is the tenth of the API server's range.
    const [sa, deployment, kubeDns] = clusterDnsObjects({ serviceCidr: '10.96.0.0/16' });
    await core.createNamespacedServiceAccount({ namespace: 'kube-system', body: sa });
    await kc.makeApiClient(k8s.AppsV1Api).createNamespacedDeployment({ namespace: 'kube-system', body: deployment });
    await core.createNamespacedService({ namespace: 'kube-system', body: kubeDns });

    dns = await ClusterDns.start({
      kc,
      listen: { host: DNS_IP, port: 0 },
      clusterDomain: 'cluster.local',
      upstream: { nameservers: [{ host: UPSTREAM_IP, port: upstreamPort }], timeoutMs: 2000, attempts: 1 },
      ports: { ready: 0, health: 0, metrics: 0 },
      logs: logs.control,
    });
    port = dns.addresses().dns.port;
    await dns.synced;
  });

  after(async () => {
    await dns?.stop();
    dnsmasq?.kill();
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('A of a ClusterIP Service over UDP: authoritative, TTL 30, its ClusterIP; kubernetes.default is the first address', async () => {
    const r = await ask('web.shop.svc.cluster.local', 'A');
    assert.equal(r.status, 'NOERROR');
    assert.ok(r.flags.includes('aa'), r.flags.join(' '));
    assert.deepEqual(r.answer, [['web.shop.svc.cluster.local.', '30', 'IN', 'A', webIp]]);
    assert.deepEqual((await ask('kubernetes.default.svc.cluster.local', 'A')).answer, [
      ['kubernetes.default.svc.cluster.local.', '30', 'IN', 'A', '10.96.0.1'],
    ]);
  });

  test("NXDOMAIN and NODATA carry the plugin's SOA (ns.dns.cluster.local. hostmaster.cluster.local. 7200 1800 86400 30)", async () => {
    const nx = await ask('nope.shop.svc.cluster.local', 'A');
    assert.equal(nx.status, 'NXDOMAIN');
    assert.ok(nx.flags.includes('aa'));
    assert.equal(nx.answer.length, 0);
    const serial = nx.authority[0]?.[6] ?? '';
    assert.deepEqual(nx.authority, [soaOf(serial)]);
    assert.ok(Math.abs(Number(serial) - Date.now() / 1000) < 600, `serial ${serial} is the last change's Unix time`);
    const nodata = await ask('web.shop.svc.cluster.local', 'AAAA');
    assert.equal(nodata.status, 'NOERROR');
    assert.deepEqual(nodata.answer, []);
    assert.deepEqual(nodata.authority, [soaOf(serial)]);
    assert.equal((await ask('web.ghost.svc.cluster.local', 'A')).status, 'NXDOMAIN');
  });

  test('SRV of a named port over TCP: the Service name as target, its A record as additional', async () => {
    const r = await ask('+tcp', '_http._tcp.web.shop.svc.cluster.local', 'SRV');
    assert.deepEqual(r.answer, [
      ['_http._tcp.web.shop.svc.cluster.local.', '30', 'IN', 'SRV', '0', '100', '80', 'web.shop.svc.cluster.local.'],
    ]);
    assert.deepEqual(r.additional, [['web.shop.svc.cluster.local.', '30', 'IN', 'A', webIp]]);
  });

  test('a headless Service: its ready endpoints, a StatefulSet hostname, SRV per endpoint, PTR back to the names', async () => {
    const a = await ask('db.shop.svc.cluster.local', 'A');
    assert.deepEqual(a.answer.map((r) => r[4]).sort(), ['10.244.1.10', '10.244.2.11']);
    assert.deepEqual((await ask('db-1.db.shop.svc.cluster.local', 'A')).answer, [
      ['db-1.db.shop.svc.cluster.local.', '30', 'IN', 'A', '10.244.2.11'],
    ]);
    assert.equal((await ask('db-2.db.shop.svc.cluster.local', 'A')).status, 'NXDOMAIN');
    assert.deepEqual((await ask('10-244-1-5.web.shop.svc.cluster.local', 'A')).answer[0]?.[4], '10.244.1.5');
    const srv = await ask('_pg._tcp.db.shop.svc.cluster.local', 'SRV');
    assert.deepEqual(srv.answer.map((r) => r.slice(4).join(' ')).sort(), [
      '0 50 5432 db-0.db.shop.svc.cluster.local.',
      '0 50 5432 db-1.db.shop.svc.cluster.local.',
    ]);
    assert.deepEqual(srv.additional.map((r) => `${r[0]} ${r[4]}`).sort(), [
      'db-0.db.shop.svc.cluster.local. 10.244.1.10',
      'db-1.db.shop.svc.cluster.local. 10.244.2.11',
    ]);
    assert.deepEqual((await ask('-x', '10.244.1.10')).answer, [
      ['10.1.244.10.in-addr.arpa.', '30', 'IN', 'PTR', 'db-0.db.shop.svc.cluster.local.'],
    ]);
    assert.deepEqual((await ask('-x', webIp)).answer[0]?.slice(3), ['PTR', 'web.shop.svc.cluster.local.']);
  });

  test('kube-dns applied with its explicit ClusterIP (the tenth address of 10.96.0.0/16) resolves both ways', async () => {
    assert.deepEqual((await ask('kube-dns.kube-system.svc.cluster.local', 'A')).answer[0]?.[4], '10.96.0.10');
    assert.deepEqual((await ask('-x', '10.96.0.10')).answer[0]?.[4], 'kube-dns.kube-system.svc.cluster.local.');
  });

  test('ExternalName: the CNAME, then the upstream answer for its target; all TTLs capped as the cache caps them', async () => {
    const r = await ask('partner.shop.svc.cluster.local', 'A');
    assert.equal(r.status, 'NOERROR');
    assert.ok(r.flags.includes('aa'));
    // dnsmasq serves its hosts file with TTL 0; the cache's floor is 5 s, and one TTL holds for the whole answer
    assert.deepEqual(r.answer, [
      ['partner.shop.svc.cluster.local.', '5', 'IN', 'CNAME', 'api.partner.example.'],
      ['api.partner.example.', '5', 'IN', 'A', '192.0.2.10'],
    ]);
    assert.deepEqual((await ask('partner.shop.svc.cluster.local', 'CNAME')).answer, [
      ['partner.shop.svc.cluster.local.', '30', 'IN', 'CNAME', 'api.partner.example.'],
    ]);
  });

  test('pods insecure, case-insensitive names, dns-version, and the zone apex', async () => {
    assert.deepEqual((await ask('1-2-3-4.shop.pod.cluster.local', 'A')).answer, [
      ['1-2-3-4.shop.pod.cluster.local.', '30', 'IN', 'A', '1.2.3.4'],
    ]);
    assert.deepEqual((await ask('WEB.Shop.SVC.Cluster.Local', 'A')).answer, [
      ['WEB.Shop.SVC.Cluster.Local.', '30', 'IN', 'A', webIp],
    ]);
    // the cache's cap applies to dns-version's 28800 too
    assert.deepEqual((await ask('dns-version.cluster.local', 'TXT')).answer, [
      ['dns-version.cluster.local.', '30', 'IN', 'TXT', '"1.1.0"'],
    ]);
    const soa = await ask('cluster.local', 'SOA');
    assert.deepEqual(soa.answer[0]?.slice(0, 6), soaOf('').slice(0, 6));
  });

  test('names outside the cluster go to the resolv.conf nameserver: its answer and its NXDOMAIN, not authoritative', async () => {
    const r = await ask('www.example', 'A');
    assert.equal(r.status, 'NOERROR');
    assert.ok(!r.flags.includes('aa'), r.flags.join(' '));
    assert.deepEqual(r.answer, [['www.example.', '5', 'IN', 'A', '198.51.100.7']]);
    assert.equal((await ask('nothing.example', 'A')).status, 'NXDOMAIN');
    // a PTR the cluster has no name for falls through to upstream, which has one from its hosts file
    assert.deepEqual((await ask('-x', '192.0.2.10')).answer[0]?.slice(3), ['PTR', 'api.partner.example.']);
  });

  test('a Service created after start resolves once the informer delivered it, and is NXDOMAIN once deleted', async () => {
    assert.equal((await ask('late.shop.svc.cluster.local', 'A')).status, 'NXDOMAIN');
    const delivered = (event: string): Promise<unknown> =>
      logs.waitFor(
        `${event} of shop/late`,
        (l) => l['message'] === 'cluster zone updated' && l['object'] === 'shop/late' && l['event'] === event,
      );
    const added = delivered('add');
    const late = await core.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'late' }, spec: { ports: [{ name: 'http', port: 80 }] } },
    });
    await added;
    assert.deepEqual((await ask('late.shop.svc.cluster.local', 'A')).answer[0]?.[4], late.spec?.clusterIP);
    const deleted = delivered('delete');
    await core.deleteNamespacedService({ name: 'late', namespace: NS });
    await deleted;
    assert.equal((await ask('late.shop.svc.cluster.local', 'A')).status, 'NXDOMAIN');
  });

  test('a UDP answer larger than 512 bytes comes truncated (TC); dig then asks over TCP and gets every record', async () => {
    const truncated = await ask('+noedns', '+ignore', 'big.shop.svc.cluster.local', 'A');
    assert.ok(truncated.flags.includes('tc'), truncated.flags.join(' '));
    assert.ok(truncated.answer.length < BIG_ENDPOINTS);
    const whole = await ask('+noedns', 'big.shop.svc.cluster.local', 'A');
    assert.ok(!whole.flags.includes('tc'));
    assert.equal(whole.answer.length, BIG_ENDPOINTS);
  });

  test('malformed messages get FORMERR or nothing, and the server answers the next query', async () => {
    assert.equal(await udpExchange(DNS_IP, port, Buffer.from([1, 2, 3]), 300), undefined, 'shorter than a header');
    const query = encode({
      type: 'query',
      id: 7,
      flags: RECURSION_DESIRED,
      questions: [{ type: 'A', name: 'web.shop.svc.cluster.local' }],
    });
    const asResponse = Buffer.from(query);
    asResponse[2]! |= 0x80;
    const formerr = decode((await udpExchange(DNS_IP, port, asResponse))!) as { rcode?: string };
    assert.equal(formerr.rcode, 'FORMERR');
    const garbage = Buffer.concat([query.subarray(0, 12), Buffer.from([0xff, 0xff, 0xff])]);
    assert.equal((decode((await udpExchange(DNS_IP, port, garbage))!) as { rcode?: string }).rcode, 'FORMERR');
    assert.equal((await ask('web.shop.svc.cluster.local', 'A')).answer[0]?.[4], webIp);
  });

  test('a second server on the same address fails to start with CLUSTER_DNS_ERR_BIND, leaving the first serving', async () => {
    await assert.rejects(
      ClusterDns.start({
        kc,
        listen: { host: DNS_IP, port },
        clusterDomain: 'cluster.local',
        upstream: { nameservers: [{ host: UPSTREAM_IP, port: upstreamPort }], timeoutMs: 2000, attempts: 1 },
        ports: { ready: 0, health: 0, metrics: 0 },
        logs: silentLogs('cluster-dns'),
      }),
      (e) => isMeshError(e, 'CLUSTER_DNS_ERR_BIND'),
    );
    assert.equal((await ask('web.shop.svc.cluster.local', 'A')).answer[0]?.[4], webIp);
  });

  test('/ready and /health say OK; /metrics counts the requests as CoreDNS names them', async () => {
    const { ready, health, metrics } = dns.addresses();
    const readyRes = await fetch(`http://${DNS_IP}:${ready}/ready`);
    assert.equal(readyRes.status, 200);
    assert.equal(await readyRes.text(), 'OK');
    assert.equal((await fetch(`http://${DNS_IP}:${health}/health`)).status, 200);
    const text = await (await fetch(`http://${DNS_IP}:${metrics}/metrics`)).text();
    assert.match(
      text,
      /coredns_dns_requests_total\{server="dns:\/\/127\.114\.0\.1:0",zone="\.",view="",proto="udp",family="1",type="A"\} \d+/,
    );
    assert.match(text, /coredns_dns_responses_total\{[^}]*rcode="NXDOMAIN",plugin="kubernetes"\} \d+/);
    assert.match(text, /coredns_dns_responses_total\{[^}]*rcode="NOERROR",plugin="forward"\} \d+/);
  });
});

describe('cluster DNS server whose API is unreachable', { skip }, () => {
  let dir: string;
  let dnsmasq: ChildProcess;
  let dns: ClusterDns;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-cluster-dns-down-'));
    const up = await upstream(dir);
    dnsmasq = up.p;
    const [apiPort = 0] = await freePorts('127.0.0.1', 1);
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'down', server: `https://127.0.0.1:${apiPort}`, skipTLSVerify: true }],
      users: [{ name: 'down', token: 'unused' }],
      contexts: [{ name: 'down', cluster: 'down', user: 'down' }],
      currentContext: 'down',
    });
    dns = await ClusterDns.start({
      kc,
      listen: { host: DOWN_IP, port: 0 },
      clusterDomain: 'cluster.local',
      upstream: { nameservers: [{ host: UPSTREAM_IP, port: up.port }], timeoutMs: 2000, attempts: 1 },
      ports: { ready: 0, health: 0, metrics: 0 },
      logs: silentLogs('cluster-dns'),
    });
  });

  after(async () => {
    await dns?.stop();
    dnsmasq?.kill();
    await rm(dir, { recursive: true, force: true });
  });

  test('until its informers sync: /ready is 503 "kubernetes", a cluster name is SERVFAIL, other names are forwarded', async () => {
    const { dns: at, ready, health } = dns.addresses();
    const r = await fetch(`http://${DOWN_IP}:${ready}/ready`);
    assert.equal(r.status, 503);
    assert.equal(await r.text(), 'kubernetes');
    assert.equal((await fetch(`http://${DOWN_IP}:${health}/health`)).status, 200);
    const cluster = await dig(DOWN_IP, at.port, 'web.shop.svc.cluster.local', 'A');
    assert.equal(cluster.status, 'SERVFAIL');
    assert.equal(cluster.authority[0]?.[3], 'SOA');
    assert.equal((await dig(DOWN_IP, at.port, 'www.example', 'A')).answer[0]?.[4], '198.51.100.7');
  });
});

test(
  '`amesh cluster-dns` as a process: serves once synced, /ready on --ready-port, exits 0 on SIGTERM',
  { skip },
  async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'amesh-cluster-dns-cli-'));
    const api = await startApiServer(path.join(dir, 'data'));
    const resolvConf = path.join(dir, 'resolv.conf');
    // a nameserver nothing listens on: this test asks only cluster names
    await writeFile(resolvConf, `nameserver ${UPSTREAM_IP}\noptions timeout:1 attempts:1\n`);
    const [dnsPort = 0, ready = 0, health = 0, metrics = 0] = await freePorts(CLI_IP, 4);
    const { cmd, args } = ameshCommand();
    const child = spawn(
      cmd,
      [
        ...args,
        'cluster-dns',
        '--listen',
        `${CLI_IP}:${dnsPort}`,
        '--kubeconfig',
        api.kubeconfigPath,
        '--resolv-conf',
        resolvConf,
        '--ready-port',
        String(ready),
        '--health-port',
        String(health),
        '--metrics-port',
        String(metrics),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_FORMAT: 'json' } },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await printedLine(
        { child, output: () => out },
        'informers synced',
        (l) => String(l['message']).startsWith('informers synced'),
        { since: 0 },
      );
      assert.equal((await fetch(`http://${CLI_IP}:${ready}/ready`)).status, 200);
      assert.deepEqual(
        (await dig(CLI_IP, dnsPort, 'kubernetes.default.svc.cluster.local', 'A')).answer[0]?.[4],
        '10.96.0.1',
      );
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      assert.deepEqual(await exited, [0, null], out);
    } finally {
      child.kill('SIGKILL');
      await api.stop();
      await rm(dir, { recursive: true, force: true });
    }
  },
);
