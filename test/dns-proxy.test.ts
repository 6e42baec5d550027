/**
 * ztunnel's DNS proxy on real sockets (127.95.0.0/24), asked by Go's resolver (an independent client) and
 * forwarding to dnsmasq (an independent upstream). Raw dns-packet exchanges check what Go does not show: codes,
 * flags, TTLs, truncation and malformed input.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import net from 'node:net';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decode, encode, RECURSION_DESIRED, type DecodedPacket, type Packet } from 'dns-packet';
import { Registry as MetricsRegistry } from 'prom-client';
import { ProxyState } from '../src/ztunnel/state/proxy-state.js';
import { DnsMetrics } from '../src/ztunnel/dns/dns-metrics.js';
import { DnsProxy } from '../src/ztunnel/dns/dns-proxy.js';
import { hostDnsListen, hostUpstreamSockets } from '../src/ztunnel/dns/dns-sockets.js';
import type { DnsClient } from '../src/ztunnel/dns/dns-store.js';
import type { UpstreamConfig } from '../src/ztunnel/dns/resolv-conf.js';
import { frame } from '../src/ztunnel/dns/dns-tcp-frames.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { freePorts } from './helpers/free-port.js';
import { buildGoPeer, goSkip, runGo } from './helpers/go.js';
import { hostService, kubeService } from './helpers/dns-state.js';
import { dnsmasqSkip, startDnsmasq, type DnsmasqZone } from './helpers/dnsmasq.js';
import { udpExchange as rawUdpExchange } from './helpers/udp-exchange.js';

const PROXY_IP = '127.95.0.1';
const OTHER_NS_PROXY_IP = '127.95.0.2';
const UPSTREAM_IP = '127.95.0.53';
const DEAD_UPSTREAM_IP = '127.95.0.54';
/** Records of the big name: more than a 512-byte or a 1232-byte (Go's EDNS size) UDP answer holds. */
const BIG_RECORDS = 150;

const skip = goSkip() || dnsmasqSkip();

const SHOP_CLIENT: DnsClient = {
  name: 'curl',
  namespace: 'shop',
  network: '',
  canonicalName: 'curl',
  canonicalRevision: 'v1',
};

function meshState(): ProxyState {
  const s = new ProxyState();
  s.update({
    services: [
      kubeService('echo', 'shop', ['/10.96.0.10'], { ipFamilies: 'IPv4' }),
      hostService('api.partner.example', 'shop', ['/240.0.0.7']),
    ],
  });
  return s;
}

/** The cluster's nameserver: `ext.example`, `echo`, `big.example` (many records), a TXT record, NXDOMAIN for the rest. */
const ZONE: DnsmasqZone = {
  hosts: [
    '192.0.2.200 ext.example',
    '192.0.2.99 echo',
    ...Array.from({ length: BIG_RECORDS }, (_, i) => `198.18.${Math.floor(i / 250)}.${(i % 250) + 1} big.example`),
  ],
  txt: ['txt.example,from dnsmasq'],
};

/** One raw exchange with the proxy; undefined when nothing came back within `timeoutMs`. */
const udpExchange = (port: number, msg: Buffer, timeoutMs?: number): Promise<Buffer | undefined> =>
  rawUdpExchange(PROXY_IP, port, msg, timeoutMs);

async function query(port: number, p: Packet): Promise<DecodedPacket & { rcode?: string }> {
  const reply = await udpExchange(port, encode(p));
  assert.ok(reply !== undefined, 'the proxy answered');
  return decode(reply);
}

const q = (name: string, type: 'A' | 'AAAA' | 'TXT', id = 4242): Packet => ({
  type: 'query',
  id,
  flags: RECURSION_DESIRED,
  questions: [{ type, name }],
});

describe('ztunnel DNS proxy', { skip }, () => {
  let dir: string;
  let go: string;
  let dnsmasq: ChildProcess;
  let upstream: UpstreamConfig;
  let registry: MetricsRegistry;
  let shop: DnsProxy;
  let web: DnsProxy;
  let shopPort: number;
  let webPort: number;
  const logs = new CapturedLogs('ztunnel', 'debug');

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-dns-'));
    go = await buildGoPeer('dns_go');
    const [port = 0] = await freePorts(UPSTREAM_IP, 1);
    dnsmasq = await startDnsmasq(dir, UPSTREAM_IP, port, ZONE);
    upstream = { nameservers: [{ host: UPSTREAM_IP, port }], timeoutMs: 2000, attempts: 1 };
    registry = new MetricsRegistry();
    const metrics = new DnsMetrics(registry);
    const state = meshState();
    const log = logs.control.scope('dns');
    shop = new DnsProxy({
      state,
      client: () => SHOP_CLIENT,
      listen: hostDnsListen([PROXY_IP], 0),
      upstream,
      upstreamSockets: hostUpstreamSockets,
      metrics,
      log,
    });
    web = new DnsProxy({
      state,
      client: () => ({ ...SHOP_CLIENT, namespace: 'web' }),
      listen: hostDnsListen([OTHER_NS_PROXY_IP], 0),
      upstream,
      upstreamSockets: hostUpstreamSockets,
      metrics,
      log,
    });
    await shop.start();
    await web.start();
    shopPort = shop.addresses().udp[0]!.port;
    webPort = web.addresses().udp[0]!.port;
    assert.equal(shop.addresses().tcp[0]!.port, shopPort, 'UDP and TCP share the port');
  });

  after(async () => {
    await shop.close();
    await web.close();
    dnsmasq.kill();
    await rm(dir, { recursive: true, force: true });
    await rm(path.dirname(go), { recursive: true, force: true });
  });

  async function goLookup(
    server: string,
    transport: 'udp' | 'tcp',
    kind: 'ip4' | 'ip6' | 'cname' | 'txt',
    name: string,
  ): Promise<{ values: string[]; error?: string; notFound: boolean }> {
    const r = await runGo(go, [server, transport, kind, name]);
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as { values: string[]; error?: string; notFound: boolean };
  }

  test('a Service resolves for a pod of its namespace as svc, svc.ns, svc.ns.svc and svc.ns.svc.cluster.local, over UDP and TCP (Go resolver)', async () => {
    for (const transport of ['udp', 'tcp'] as const) {
      for (const name of [
        'echo.',
        'echo.shop.',
        'echo.shop.svc.',
        'echo.shop.svc.cluster.local.',
        'echo.shop.shop.svc.cluster.local.',
      ]) {
        assert.deepEqual(
          (await goLookup(`${PROXY_IP}:${shopPort}`, transport, 'ip4', name)).values,
          ['10.96.0.10'],
          `${transport} ${name}`,
        );
      }
    }
  });

  test("the short name follows the asking pod: from namespace web, echo.shop is the Service but echo is upstream's", async () => {
    assert.deepEqual((await goLookup(`${OTHER_NS_PROXY_IP}:${webPort}`, 'udp', 'ip4', 'echo.shop.')).values, [
      '10.96.0.10',
    ]);
    assert.deepEqual((await goLookup(`${OTHER_NS_PROXY_IP}:${webPort}`, 'udp', 'ip4', 'echo.')).values, ['192.0.2.99']);
    const missing = await goLookup(`${OTHER_NS_PROXY_IP}:${webPort}`, 'udp', 'ip4', 'echo.web.svc.cluster.local.');
    assert.equal(missing.notFound, true, JSON.stringify(missing));
  });

  test('a ServiceEntry host under a search domain is answered with a CNAME to the host (Go LookupCNAME)', async () => {
    const r = await goLookup(`${PROXY_IP}:${shopPort}`, 'udp', 'cname', 'api.partner.example.shop.svc.cluster.local.');
    assert.deepEqual(r.values, ['api.partner.example.']);
    assert.deepEqual((await goLookup(`${PROXY_IP}:${shopPort}`, 'udp', 'ip4', 'api.partner.example.')).values, [
      '240.0.0.7',
    ]);
  });

  test('own answers are authoritative with TTL 30; AAAA of an IPv4-only Service is NOERROR with no records, not NXDOMAIN', async () => {
    const a = await query(shopPort, q('Echo.Shop.svc.cluster.local', 'A'));
    assert.equal(a.id, 4242);
    assert.equal(a.rcode, 'NOERROR');
    assert.ok(a.flag_aa && a.flag_ra && a.flag_rd && a.flag_qr);
    assert.deepEqual(
      a.answers?.map((r) => [r.name, r.type, 'ttl' in r ? r.ttl : undefined, 'data' in r ? r.data : undefined]),
      [['Echo.Shop.svc.cluster.local', 'A', 30, '10.96.0.10']],
    );
    const aaaa = await query(shopPort, q('echo.shop.svc.cluster.local', 'AAAA'));
    assert.equal(aaaa.rcode, 'NOERROR');
    assert.ok(aaaa.flag_aa);
    assert.deepEqual(aaaa.answers, []);
  });

  test('names ztunnel does not own go upstream (dnsmasq): answers non-authoritative, NXDOMAIN and other record types passed through', async () => {
    assert.deepEqual((await goLookup(`${PROXY_IP}:${shopPort}`, 'udp', 'ip4', 'ext.example.')).values, ['192.0.2.200']);
    assert.deepEqual((await goLookup(`${PROXY_IP}:${shopPort}`, 'tcp', 'ip4', 'ext.example.')).values, ['192.0.2.200']);
    assert.deepEqual((await goLookup(`${PROXY_IP}:${shopPort}`, 'udp', 'txt', 'txt.example.')).values, [
      'from dnsmasq',
    ]);
    const missing = await goLookup(`${PROXY_IP}:${shopPort}`, 'udp', 'ip4', 'missing.shop.svc.cluster.local.');
    assert.equal(missing.notFound, true, JSON.stringify(missing));
    const ext = await query(shopPort, q('ext.example', 'A'));
    assert.equal(ext.flag_aa, false);
    assert.equal((await query(shopPort, q('nope.example', 'A'))).rcode, 'NXDOMAIN');
    assert.equal(
      (await query(shopPort, q('echo.shop.svc.cluster.local', 'TXT'))).rcode,
      'NXDOMAIN',
      'a known host, but not A/AAAA: forwarded',
    );
  });

  test('an answer too big for UDP comes back truncated with TC, and Go retries over TCP and gets every record', async () => {
    const plain = await udpExchange(shopPort, encode(q('big.example', 'A')));
    assert.ok(plain !== undefined && plain.length <= 512, 'no EDNS: at most 512 bytes');
    const truncated = decode(plain);
    assert.equal(truncated.flag_tc, true);
    assert.ok((truncated.answers?.length ?? 0) < BIG_RECORDS);
    const before = await registry.getSingleMetricAsString('istio_dns_requests_total');
    const r = await goLookup(`${PROXY_IP}:${shopPort}`, 'udp', 'ip4', 'big.example.');
    assert.equal(r.values.length, BIG_RECORDS, JSON.stringify(r));
    const afterText = await registry.getSingleMetricAsString('istio_dns_requests_total');
    const count = (text: string, protocol: string): number =>
      Number(new RegExp(`request_query_type="a",request_protocol="${protocol}"[^}]*} (\\d+)`).exec(text)?.[1] ?? 0);
    assert.ok(count(afterText, 'tcp') > count(before, 'tcp'), 'Go asked again over TCP');
  });

  test('malformed input: garbage gets FORMERR with its ID, a response or a short datagram gets nothing or FORMERR, and the next query is answered', async () => {
    const garbage = Buffer.concat([
      Buffer.from([0xbe, 0xef, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]),
      Buffer.from([0x3f, 0x61]),
    ]);
    const formerr = decode((await udpExchange(shopPort, garbage))!);
    assert.equal(formerr.id, 0xbeef);
    assert.equal((formerr as { rcode?: string }).rcode, 'FORMERR');
    const asResponse = encode({ ...q('echo.shop', 'A', 7), type: 'response' });
    assert.equal((decode((await udpExchange(shopPort, asResponse))!) as { rcode?: string }).rcode, 'FORMERR');
    const twoQuestions = encode({
      type: 'query',
      id: 8,
      questions: [
        { type: 'A', name: 'a.example' },
        { type: 'A', name: 'b.example' },
      ],
    });
    assert.equal((decode((await udpExchange(shopPort, twoQuestions))!) as { rcode?: string }).rcode, 'FORMERR');
    const notQuery = encode(q('echo.shop', 'A', 9));
    notQuery.writeUInt16BE(notQuery.readUInt16BE(2) | (2 << 11), 2); // opcode STATUS
    assert.equal((decode((await udpExchange(shopPort, notQuery))!) as { rcode?: string }).rcode, 'NOTIMP');
    // Shorter than a header: dropped. The query sent right after it on the same socket gets the first reply.
    const s = dgram.createSocket('udp4');
    try {
      s.send(Buffer.from([1, 2, 3]), shopPort, PROXY_IP);
      s.send(encode(q('echo.shop', 'A', 10)), shopPort, PROXY_IP);
      const [reply] = (await once(s, 'message')) as [Buffer];
      const first = decode(reply) as DecodedPacket & { rcode?: string };
      assert.deepEqual([first.id, first.rcode], [10, 'NOERROR'], 'the short datagram got no reply');
    } finally {
      s.close();
    }
    await logs.waitFor('the dropped datagram logged', (l) => l.code === 'ZT_ERR_DNS_BAD_QUERY' && l.bytes === 3);
  });

  test('a TCP frame longer than any query closes that connection only; a pipelined connection beside it is answered in full', async () => {
    const bad = net.connect(shopPort, PROXY_IP);
    await once(bad, 'connect');
    const good = net.connect(shopPort, PROXY_IP);
    await once(good, 'connect');
    const header = Buffer.alloc(2);
    header.writeUInt16BE(60_000);
    bad.write(header);
    bad.write(Buffer.alloc(5000));
    await once(bad, 'close');
    good.write(Buffer.concat([frame(encode(q('echo.shop', 'A', 1))), frame(encode(q('ext.example', 'A', 2)))]));
    let buf = Buffer.alloc(0);
    const ids = new Set<number>();
    for await (const chunk of good) {
      buf = Buffer.concat([buf, chunk as Buffer]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        ids.add(decode(buf.subarray(2, 2 + buf.readUInt16BE(0))).id!);
        buf = buf.subarray(2 + buf.readUInt16BE(0));
      }
      if (ids.size === 2) break;
    }
    good.destroy();
    assert.deepEqual([...ids].sort(), [1, 2]);
  });

  test('an unknown source gets SERVFAIL; an upstream that never answers gives SERVFAIL and counts istio_dns_upstream_failures_total', async () => {
    const reg = new MetricsRegistry();
    const metrics = new DnsMetrics(reg);
    const unknown = new DnsProxy({
      state: meshState(),
      client: () => undefined,
      listen: hostDnsListen([PROXY_IP], 0),
      upstream,
      upstreamSockets: hostUpstreamSockets,
      metrics,
      log: logs.control.scope('dns'),
    });
    const [deadPort = 0] = await freePorts(DEAD_UPSTREAM_IP, 1);
    const deadUpstream = new DnsProxy({
      state: meshState(),
      client: () => SHOP_CLIENT,
      listen: hostDnsListen([PROXY_IP], 0),
      upstream: { nameservers: [{ host: DEAD_UPSTREAM_IP, port: deadPort }], timeoutMs: 200, attempts: 2 },
      upstreamSockets: hostUpstreamSockets,
      metrics,
      log: logs.control.scope('dns'),
    });
    await unknown.start();
    try {
      assert.equal((await query(unknown.addresses().udp[0]!.port, q('echo.shop', 'A'))).rcode, 'SERVFAIL');
    } finally {
      await unknown.close();
    }
    await deadUpstream.start();
    try {
      const port = deadUpstream.addresses().udp[0]!.port;
      assert.equal((await query(port, q('ext.example', 'A'))).rcode, 'SERVFAIL');
      assert.equal((await query(port, q('echo.shop', 'A'))).rcode, 'NOERROR', 'own names need no upstream');
      const text = await reg.metrics();
      assert.match(
        text,
        /istio_dns_upstream_failures_total\{request_query_type="a",request_protocol="udp",source_canonical_service="curl",source_canonical_revision="v1"\} 1/,
      );
      assert.match(text, /istio_dns_upstream_requests_total\{[^}]*\} 1/);
      assert.match(
        text,
        /istio_dns_requests_total\{request_query_type="a",request_protocol="udp",source_canonical_service="unknown",source_canonical_revision="unknown"\} 1/,
      );
      assert.match(text, /istio_dns_upstream_request_duration_seconds_count\{[^}]*\} 1/);
    } finally {
      await deadUpstream.close();
    }
  });
});
