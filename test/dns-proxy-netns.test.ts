/**
 * ztunnel's DNS proxy in a pod's network namespace, as in-pod mode runs it (root): listeners on 127.0.0.1:15053 and
 * [::1]:15053 inside the namespace, upstream queries from marked sockets in it. The namespace drops DNS to the
 * nameserver unless it carries ztunnel's mark, as a pod's DNS capture would send it back to ztunnel.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import type dgram from 'node:dgram';
import net from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Registry as MetricsRegistry } from 'prom-client';
import { ProxyState } from '../src/ztunnel/state/proxy-state.js';
import { DnsMetrics } from '../src/ztunnel/dns/dns-metrics.js';
import { DnsProxy } from '../src/ztunnel/dns/dns-proxy.js';
import { DNS_PROXY_PORT, INPOD_MARK } from '../src/lib/istio-ports.js';
import { podDnsListen, podUpstreamSockets } from '../src/ztunnel/dns/dns-sockets.js';
import { listenInNetns, udpSocketInNetns } from '../src/native/native.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { dnsmasqSkip, startDnsmasq } from './helpers/dnsmasq.js';
import { kubeService } from './helpers/dns-state.js';
import { buildGoPeer, goSkip } from './helpers/go.js';
import { netnsSkip, TestNetns } from './helpers/netns.js';

const skip = netnsSkip() || goSkip() || dnsmasqSkip();

describe('ztunnel DNS proxy inside a pod network namespace', { skip }, () => {
  let ns: TestNetns;
  let dir: string;
  let go: string;
  let dnsmasq: ChildProcess;
  const logs = new CapturedLogs('ztunnel', 'debug');
  const metrics = new DnsMetrics(new MetricsRegistry());
  const state = new ProxyState();
  state.update({ services: [kubeService('echo', 'shop', ['/10.96.0.10'])] });

  const proxy = (reusePort = true): DnsProxy =>
    new DnsProxy({
      state,
      client: () => ({ name: 'curl', namespace: 'shop', network: '', canonicalName: 'curl', canonicalRevision: 'v1' }),
      listen: podDnsListen(ns.path, DNS_PROXY_PORT, { mark: INPOD_MARK, reusePort }),
      upstream: { nameservers: [{ host: '127.0.0.1', port: 53 }], timeoutMs: 1000, attempts: 1 },
      upstreamSockets: podUpstreamSockets(ns.path),
      metrics,
      log: logs.control.scope('dns'),
    });

  before(async () => {
    ns = await TestNetns.create();
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-dns-netns-'));
    go = await buildGoPeer('dns_go');
    dnsmasq = await startDnsmasq(dir, '127.0.0.1', 53, { hosts: ['192.0.2.200 ext.example'] }, [
      'ip',
      'netns',
      'exec',
      ns.name,
    ]);
    for (const proto of ['udp', 'tcp'])
      await ns.exec('iptables', [
        '-A',
        'OUTPUT',
        '-p',
        proto,
        '--dport',
        '53',
        '-m',
        'mark',
        '!',
        '--mark',
        '0x539',
        '-j',
        'DROP',
      ]);
  });

  after(async () => {
    dnsmasq.kill();
    await ns.remove();
    await rm(dir, { recursive: true, force: true });
    await rm(path.dirname(go), { recursive: true, force: true });
  });

  const lookup = async (server: string, transport: string, name: string): Promise<unknown> =>
    JSON.parse(await ns.exec(go, [server, transport, 'ip4', name]));

  test('in-pod: a pod resolves Services and upstream names on 127.0.0.1:15053 and [::1]:15053, upstream through marked sockets', async () => {
    const p = proxy();
    await p.start();
    try {
      assert.deepEqual(
        p.addresses().udp.map((a) => `${a.address}:${a.port}`),
        [`127.0.0.1:${DNS_PROXY_PORT}`, `::1:${DNS_PROXY_PORT}`],
      );
      for (const server of [`127.0.0.1:${DNS_PROXY_PORT}`, `[::1]:${DNS_PROXY_PORT}`]) {
        for (const transport of ['udp', 'tcp']) {
          assert.deepEqual(
            await lookup(server, transport, 'echo.'),
            { values: ['10.96.0.10'], notFound: false },
            `${server} ${transport}`,
          );
          assert.deepEqual(
            await lookup(server, transport, 'ext.example.'),
            { values: ['192.0.2.200'], notFound: false },
            `${server} ${transport} forwarded`,
          );
        }
      }
      const unmarked = await ns.exec('iptables', ['-L', 'OUTPUT', '-v', '-n', '-x']);
      assert.match(unmarked, /^\s+0\s+0\s+DROP/m, 'nothing unmarked reached the nameserver');
    } finally {
      await p.close();
    }
  });

  test('in-pod: a new proxy binds 15053 beside the running one (SO_REUSEPORT), as an upgraded ztunnel does', async () => {
    const old = proxy();
    const next = proxy();
    await old.start();
    try {
      await next.start();
      await old.close();
      assert.deepEqual(await lookup(`127.0.0.1:${DNS_PROXY_PORT}`, 'udp', 'echo.shop.'), {
        values: ['10.96.0.10'],
        notFound: false,
      });
    } finally {
      await old.close();
      await next.close();
    }
  });

  test('in-pod with INPOD_PORT_REUSE=false: 15053 is not shared, a second socket on it fails with EADDRINUSE over UDP and TCP', async () => {
    const p = proxy(false);
    await p.start();
    const tcp = net.createServer();
    try {
      const udp = await udpSocketInNetns(ns.path, { host: '127.0.0.1', port: DNS_PROXY_PORT, reusePort: true }).then(
        (u) => {
          u.close();
          return 'bound';
        },
        (e: unknown) => (e as NodeJS.ErrnoException).code,
      );
      assert.equal(udp, 'EADDRINUSE');
      await assert.rejects(listenInNetns(tcp, ns.path, { host: '127.0.0.1', port: DNS_PROXY_PORT, reusePort: true }), {
        code: 'EADDRINUSE',
      });
      assert.deepEqual(
        await lookup(`127.0.0.1:${DNS_PROXY_PORT}`, 'udp', 'echo.shop.'),
        { values: ['10.96.0.10'], notFound: false },
        'the proxy still serves',
      );
    } finally {
      tcp.close();
      await p.close();
    }
  });

  test("in-pod upstream UDP sockets never share an ephemeral port (no SO_REUSEPORT), so no reply reaches another query's socket", async () => {
    const small = await TestNetns.create();
    const sockets: dgram.Socket[] = [];
    try {
      // Four ephemeral ports for five sockets: sharing would bind all five, two on one port.
      await small.exec('sysctl', ['-q', '-w', 'net.ipv4.ip_local_port_range=40000 40003']);
      const upstream = podUpstreamSockets(small.path);
      for (let i = 0; i < 5; i++)
        await upstream.udp(4).then(
          (u) => sockets.push(u),
          () => undefined,
        );
      const ports = sockets.map((u) => u.address().port);
      assert.equal(new Set(ports).size, ports.length, `ports: ${ports.join(', ')}`);
      assert.equal(ports.length, 4);
    } finally {
      for (const u of sockets) u.close();
      await small.remove();
    }
  });
});
