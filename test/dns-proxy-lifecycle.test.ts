/**
 * ztunnel's DNS proxy under load and shutdown, on real sockets (127.97.0.0/24, and [::1] for the upstream
 * address test): the start/close race, the per-proxy cap on upstream forwards, TCP pipelining, and which
 * datagrams count as the upstream's answer. The upstream is a raw UDP socket the test answers (or not) at will.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { EventEmitter, once } from 'node:events';
import { decode, encode, RECURSION_DESIRED, type DecodedPacket, type Packet } from 'dns-packet';
import { Registry as MetricsRegistry } from 'prom-client';
import { isMeshError } from '../src/lib/errors.js';
import { ProxyState } from '../src/ztunnel/state/proxy-state.js';
import { DnsMetrics } from '../src/ztunnel/dns/dns-metrics.js';
import { DnsProxy, MAX_FORWARDS_IN_FLIGHT } from '../src/ztunnel/dns/dns-proxy.js';
import { hostDnsListen, hostUpstreamSockets, type DnsListen } from '../src/ztunnel/dns/dns-sockets.js';
import type { DnsClient } from '../src/ztunnel/dns/dns-store.js';
import type { UpstreamConfig } from '../src/ztunnel/dns/resolv-conf.js';
import { frame } from '../src/ztunnel/dns/dns-tcp-frames.js';
import { CapturedLogs } from './helpers/captured-logs.js';

const PROXY_IP = '127.97.0.1';
const UPSTREAM_IP = '127.97.0.53';
/** Long enough that no forward in these tests ends by timing out: a forward ends when answered or cancelled. */
const NEVER_MS = 60_000;

const CLIENT: DnsClient = {
  name: 'curl',
  namespace: 'shop',
  network: '',
  canonicalName: 'curl',
  canonicalRevision: 'v1',
};

const q = (name: string, id: number): Packet => ({
  type: 'query',
  id,
  flags: RECURSION_DESIRED,
  questions: [{ type: 'A', name }],
});

/** A nameserver the test drives: it records each query, and answers (192.0.2.1) only while `answering`. */
class TestUpstream extends EventEmitter<{ query: [DecodedPacket] }> {
  readonly queries: { packet: DecodedPacket; port: number; address: string }[] = [];
  answering = false;

  private constructor(readonly socket: dgram.Socket) {
    super();
    socket.on('message', (msg, rinfo) => {
      const packet = decode(msg);
      this.queries.push({ packet, port: rinfo.port, address: rinfo.address });
      if (this.answering) this.answer(packet, rinfo.port, rinfo.address);
      this.emit('query', packet);
    });
  }

  static async start(host: string): Promise<TestUpstream> {
    const s = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
    s.bind(0, host);
    await once(s, 'listening');
    return new TestUpstream(s);
  }

  get port(): number {
    return this.socket.address().port;
  }

  /** Resolves once `n` queries arrived in all. */
  async received(n: number): Promise<void> {
    while (this.queries.length < n) await once(this, 'query');
  }

  answerAll(): void {
    this.answering = true;
    for (const { packet, port, address } of this.queries) this.answer(packet, port, address);
  }

  private answer(p: DecodedPacket, port: number, address: string): void {
    const reply = encode({
      type: 'response',
      id: p.id,
      flags: RECURSION_DESIRED,
      questions: p.questions,
      answers: [{ type: 'A', name: p.questions![0]!.name, ttl: 60, data: '192.0.2.1' }],
    });
    this.socket.send(reply, port, address);
  }
}

/** A client socket that sends raw queries to the proxy and collects the replies by ID. */
class UdpAsker {
  readonly replies = new Map<number, DecodedPacket & { rcode?: string }>();
  private readonly events = new EventEmitter<{ reply: [] }>();
  readonly socket = dgram.createSocket('udp4');

  constructor(private readonly port: number) {
    this.socket.on('message', (msg) => {
      const p = decode(msg);
      this.replies.set(p.id!, p);
      this.events.emit('reply');
    });
  }

  send(p: Packet): void {
    this.socket.send(encode(p), this.port, PROXY_IP);
  }

  async reply(id: number): Promise<DecodedPacket & { rcode?: string }> {
    while (!this.replies.has(id)) await once(this.events, 'reply');
    return this.replies.get(id)!;
  }
}

describe('ztunnel DNS proxy lifecycle and limits', { timeout: 60_000 }, () => {
  let upstream: TestUpstream;
  let registry: MetricsRegistry;
  const logs = new CapturedLogs('ztunnel', 'debug');

  const proxy = (config: Partial<UpstreamConfig> = {}, listen: DnsListen = hostDnsListen([PROXY_IP], 0)): DnsProxy =>
    new DnsProxy({
      state: new ProxyState(),
      client: () => CLIENT,
      listen,
      upstream: {
        nameservers: [{ host: UPSTREAM_IP, port: upstream.port }],
        timeoutMs: NEVER_MS,
        attempts: 1,
        ...config,
      },
      upstreamSockets: hostUpstreamSockets,
      metrics: new DnsMetrics(registry),
      log: logs.control.scope('dns'),
    });

  beforeEach(async () => {
    upstream = await TestUpstream.start(UPSTREAM_IP);
    registry = new MetricsRegistry();
  });
  afterEach(() => upstream.socket.close());

  test('close() while start() is still binding closes the listeners once bound (the port is free again); a second start() throws', async () => {
    let bound!: (port: number) => void;
    const boundPort = new Promise<number>((resolve) => (bound = resolve));
    const listen = hostDnsListen([PROXY_IP], 0);
    const p = proxy({}, async () => {
      const l = await listen();
      bound(l.udp[0]!.address().port);
      return l;
    });
    const starting = p.start();
    const closing = p.close();
    await starting;
    await closing;
    const port = await boundPort;
    const again = dgram.createSocket('udp4');
    again.bind(port, PROXY_IP);
    await once(again, 'listening');
    again.close();
    const tcp = net.createServer().listen(port, PROXY_IP);
    await once(tcp, 'listening');
    tcp.close();
    await assert.rejects(p.start(), (e) => isMeshError(e, 'ZT_ERR_BIND'));
  });

  test(`UDP queries past ${MAX_FORWARDS_IN_FLIGHT} forwards in flight get SERVFAIL at once; close() cancels the forwards in flight`, async () => {
    const p = proxy();
    await p.start();
    const asker = new UdpAsker(p.addresses().udp[0]!.port);
    try {
      for (let i = 0; i < MAX_FORWARDS_IN_FLIGHT; i++) asker.send(q(`n${i}.example`, i));
      await upstream.received(MAX_FORWARDS_IN_FLIGHT);
      asker.send(q('over.example', 9999));
      assert.equal((await asker.reply(9999)).rcode, 'SERVFAIL');
      assert.equal(asker.replies.size, 1, 'the forwards in flight are still waiting');
    } finally {
      await p.close();
      asker.socket.close();
    }
    // close() returned once every forward was cancelled and its socket released.
    const failures = await registry.getSingleMetricAsString('istio_dns_upstream_failures_total');
    assert.match(failures, new RegExp(`} ${MAX_FORWARDS_IN_FLIGHT}$`, 'm'));
    assert.equal(upstream.queries.length, MAX_FORWARDS_IN_FLIGHT, 'the query over the cap was never forwarded');
  });

  test('a TCP query past the forward cap waits for a slot instead of failing; a chunk of pipelined queries is forwarded 32 at a time', async () => {
    const p = proxy();
    await p.start();
    const port = p.addresses().udp[0]!.port;
    const asker = new UdpAsker(port);
    const c = net.connect(port, PROXY_IP);
    try {
      await once(c, 'connect');
      const pipelined = 40;
      c.write(Buffer.concat(Array.from({ length: pipelined }, (_, i) => frame(encode(q(`tcp${i}.example`, i))))));
      await upstream.received(32);
      // A query sent after the first 32 arrived: it reaches the upstream before any more of the chunk would.
      asker.send(q('marker.example', 5000));
      while (
        !upstream.queries.some((x) => x.packet.id !== undefined && x.packet.questions?.[0]?.name === 'marker.example')
      )
        await once(upstream, 'query');
      assert.equal(
        upstream.queries.filter((x) => x.packet.questions?.[0]?.name.startsWith('tcp') === true).length,
        32,
        'at most 32 of one connection at once',
      );
      // Fill the proxy's remaining slots with UDP, then one more TCP query must wait, not fail.
      const free = MAX_FORWARDS_IN_FLIGHT - 33;
      for (let i = 0; i < free; i++) asker.send(q(`fill${i}.example`, 6000 + i));
      await upstream.received(MAX_FORWARDS_IN_FLIGHT);
      const second = net.connect(port, PROXY_IP);
      await once(second, 'connect');
      second.write(frame(encode(q('late.example', 7000))));
      await logs.waitFor(
        'the TCP query over the cap waits',
        (l) => typeof l.message === 'string' && l.message.startsWith('DNS TCP query waits'),
      );
      upstream.answerAll();
      const [late] = (await once(second, 'data')) as [Buffer];
      second.destroy();
      const lateReply = decode(late.subarray(2)) as DecodedPacket & { rcode?: string };
      assert.deepEqual([lateReply.id, lateReply.rcode], [7000, 'NOERROR']);
      const ids = new Set<number>();
      let buf = Buffer.alloc(0);
      for await (const chunk of c) {
        buf = Buffer.concat([buf, chunk as Buffer]);
        while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
          const r = decode(buf.subarray(2, 2 + buf.readUInt16BE(0))) as DecodedPacket & { rcode?: string };
          assert.equal(r.rcode, 'NOERROR', `query ${r.id!}`);
          ids.add(r.id!);
          buf = buf.subarray(2 + buf.readUInt16BE(0));
        }
        if (ids.size === pipelined) break;
      }
      assert.equal(ids.size, pipelined);
    } finally {
      c.destroy();
      asker.socket.close();
      await p.close();
    }
  });

  test("the upstream's answer is taken when its source address is the nameserver written in another form (0:0::1 for ::1)", async () => {
    const v6 = await TestUpstream.start('::1');
    v6.answering = true;
    const p = proxy({ nameservers: [{ host: '0:0:0::1', port: v6.port }], timeoutMs: 2_000 });
    await p.start();
    const asker = new UdpAsker(p.addresses().udp[0]!.port);
    try {
      asker.send(q('v6.example', 77));
      const r = await asker.reply(77);
      assert.equal(r.rcode, 'NOERROR');
      assert.deepEqual(
        r.answers?.map((a) => 'data' in a && a.data),
        ['192.0.2.1'],
      );
    } finally {
      asker.socket.close();
      v6.socket.close();
      await p.close();
    }
  });
});
