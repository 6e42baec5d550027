import { setMaxListeners } from 'node:events';
import type { AddressInfo } from 'node:net';
import type net from 'node:net';
import type { Question } from 'dns-packet';
import type { Logger } from '../../lib/log.js';
import { describeError, MeshError } from '../../lib/errors.js';
import type { ProxyState } from '../state/proxy-state.js';
import { DnsForwarder, type DnsUpstreamSockets } from './dns-forwarder.js';
import { MAX_TCP_MESSAGE, RCODE, encodeResponse, parseQuery, udpLimit, type DnsAnswer } from './dns-message.js';
import { DnsMetrics, dnsLabels, type DnsProtocol } from './dns-metrics.js';
import type { DnsListen, DnsListeners } from './dns-sockets.js';
import { DnsStore, type DnsClient, type DnsStoreOptions } from './dns-store.js';
import { FrameDecoder, frame } from './dns-tcp-frames.js';
import type { UpstreamConfig } from './resolv-conf.js';

/** A TCP connection with no query for this long is closed (hickory's request timeout in ztunnel `src/dns/server.rs`). */
const TCP_IDLE_TIMEOUT_MS = 5_000;
/**
 * The longest query taken over TCP. A query is one question plus EDNS options (cookies, padding to 468 bytes);
 * 4 KiB holds any a resolver sends, without buffering up to 64 KiB per connection for a peer that claims more.
 */
const MAX_TCP_QUERY_BYTES = 4_096;
/** Queries of one TCP connection answered at once (hickory's response buffer in ztunnel); more wait unread. */
const MAX_TCP_IN_FLIGHT = 32;
/**
 * Upstream forwards one proxy (one pod) runs at once. Each holds a socket in ztunnel, which serves every pod of the
 * node from one fd limit: a pod flooding names ztunnel does not own must not take the fds the other pods' proxies
 * and connections need. 128 is four TCP connections' worth of pipelined queries, far above what a resolver keeps
 * in flight. Over the cap a UDP query gets SERVFAIL (the client retries); a TCP query waits for a slot.
 */
export const MAX_FORWARDS_IN_FLIGHT = 128;

const SERVFAIL: DnsAnswer = { rcode: RCODE.SERVFAIL, authoritative: false, answers: [], additionals: [] };

export interface DnsProxyOptions extends DnsStoreOptions {
  /** ztunnel's state: services by hostname, their VIPs, and the workloads behind headless services. */
  readonly state: ProxyState;
  /** The workload whose queries this proxy answers (in-pod: its pod), or undefined while unknown: SERVFAIL. */
  readonly client: () => DnsClient | undefined;
  /** Binds the listeners (`hostDnsListen` locally, `podDnsListen` in a pod). */
  readonly listen: DnsListen;
  /** Where the names ztunnel does not own go (`readResolvConf()`: the system's nameservers). */
  readonly upstream: UpstreamConfig;
  /** How upstream sockets are made (`hostUpstreamSockets`, `podUpstreamSockets`). */
  readonly upstreamSockets: DnsUpstreamSockets;
  /** Shared by all of a ztunnel's proxies (one registry cannot hold a metric twice). */
  readonly metrics: DnsMetrics;
  readonly log: Logger;
}

/**
 * ztunnel's DNS proxy for one workload (ztunnel `src/dns/server.rs` `Server`): over UDP and TCP, A and AAAA for the
 * hosts ztunnel knows are answered from its state (`DnsStore`), authoritative, TTL 30 s; everything else goes
 * upstream (`DnsForwarder`). A UDP answer larger than the client takes is truncated with TC set, so it asks again
 * over TCP. A malformed query gets FORMERR (or is dropped when it has no header); a TCP frame longer than any
 * query closes that connection. Nothing a client sends disturbs other queries.
 */
export class DnsProxy {
  private readonly store: DnsStore;
  private readonly forwarder: DnsForwarder;
  private listeners: DnsListeners | undefined;
  private readonly connections = new Set<net.Socket>();
  private started = false;
  private closed = false;
  /** Cancels the forwards in flight when the proxy closes. */
  private readonly closing = new AbortController();
  /** Forwards running now (at most MAX_FORWARDS_IN_FLIGHT), and TCP queries waiting for one to finish. */
  private forwards = 0;
  private readonly forwardWaiters: (() => void)[] = [];
  /** Every query being answered, so close() returns once the cancelled ones are done. */
  private readonly answering = new Set<Promise<unknown>>();

  constructor(private readonly opts: DnsProxyOptions) {
    this.store = new DnsStore(opts.state, opts);
    this.forwarder = new DnsForwarder(opts.upstream, opts.upstreamSockets);
    // Each forward in flight listens for the abort.
    setMaxListeners(MAX_FORWARDS_IN_FLIGHT, this.closing.signal);
  }

  /**
   * Binds the listeners and starts answering; once only. When close() comes while binding, the listeners are
   * closed as soon as they are bound.
   */
  async start(): Promise<void> {
    if (this.started)
      throw new MeshError('ZT_ERR_BIND', 'the DNS proxy was already started; make a new one to listen again');
    this.started = true;
    const l = await this.opts.listen();
    if (this.closed) {
      await closeListeners(l);
      return;
    }
    this.listeners = l;
    for (const s of l.udp) {
      s.on('message', (msg, rinfo) => {
        void this.track(this.respond(msg, 'udp')).then((out) => {
          if (out !== undefined && !this.closed) s.send(out, rinfo.port, rinfo.address);
        });
      });
      s.on('error', (e) => this.opts.log.warn({ error: describeError(e) }, 'DNS UDP socket error'));
    }
    for (const server of l.tcp) server.on('connection', (c) => this.serveTcp(c));
    this.opts.log.info(
      { udp: l.udp.map((s) => s.address()), tcp: l.tcp.map((s) => s.address()) },
      'DNS proxy listening',
    );
  }

  /** Where the proxy listens, once started. */
  addresses(): { udp: AddressInfo[]; tcp: AddressInfo[] } {
    return {
      udp: this.listeners?.udp.map((s) => s.address()) ?? [],
      tcp: this.listeners?.tcp.map((s) => s.address() as AddressInfo) ?? [],
    };
  }

  /**
   * Stops listening, closes open TCP connections and cancels the forwards in flight at once; resolves when the
   * listeners and every upstream socket are closed.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort(new MeshError('ZT_ERR_SHUTTING_DOWN', 'the DNS proxy closed'));
    for (const wake of this.forwardWaiters.splice(0)) wake();
    const l = this.listeners;
    this.listeners = undefined;
    for (const c of this.connections) c.destroy();
    await Promise.all([...(l === undefined ? [] : [closeListeners(l)]), ...this.answering]);
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.answering.add(p);
    void p.finally(() => this.answering.delete(p));
    return p;
  }

  private serveTcp(c: net.Socket): void {
    if (this.closed) {
      c.destroy();
      return;
    }
    this.connections.add(c);
    c.on('close', () => this.connections.delete(c));
    c.on('error', (e) => this.opts.log.debug({ error: describeError(e) }, 'DNS TCP connection error'));
    c.setTimeout(TCP_IDLE_TIMEOUT_MS, () => c.destroy());
    const frames = new FrameDecoder(MAX_TCP_QUERY_BYTES);
    // Queries read but not yet being answered: a chunk may hold many; they start MAX_TCP_IN_FLIGHT at a time.
    const queued: Buffer[] = [];
    let inFlight = 0;
    const dispatch = (): void => {
      while (inFlight < MAX_TCP_IN_FLIGHT && queued.length > 0 && !c.destroyed) {
        inFlight++;
        void this.track(this.respond(queued.shift()!, 'tcp')).then((out) => {
          inFlight--;
          if (out !== undefined && c.writable) c.write(frame(out));
          dispatch();
        });
      }
      if (queued.length === 0) c.resume();
      else c.pause();
    };
    c.on('data', (chunk: Buffer) => {
      const queries = frames.push(chunk);
      if (queries === undefined) {
        this.opts.log.debug(
          { code: 'ZT_ERR_DNS_BAD_QUERY', peer: c.remoteAddress },
          `DNS TCP frame longer than ${MAX_TCP_QUERY_BYTES} bytes; connection closed`,
        );
        c.destroy();
        return;
      }
      queued.push(...queries);
      dispatch();
    });
  }

  /** The response to one message (never rejects), or undefined to send none. */
  private async respond(msg: Buffer, protocol: DnsProtocol): Promise<Buffer | undefined> {
    const parsed = parseQuery(msg);
    if (parsed === undefined || 'reply' in parsed) {
      this.opts.log.debug(
        { code: 'ZT_ERR_DNS_BAD_QUERY', protocol, bytes: msg.length },
        parsed === undefined
          ? 'DNS message shorter than a header; dropped'
          : 'malformed DNS query; answered with an error',
      );
      return parsed?.reply;
    }
    const q = parsed.query;
    const limit = protocol === 'udp' ? udpLimit(q) : MAX_TCP_MESSAGE;
    const answer = await this.resolve(q.question, protocol);
    try {
      return encodeResponse(q, answer, limit);
    } catch (e) {
      // An upstream record the encoder cannot write back.
      this.opts.log.debug(
        { code: 'ZT_ERR_DNS_UPSTREAM', domain: q.question.name, error: describeError(e) },
        'cannot encode the upstream answer',
      );
      return encodeResponse(q, SERVFAIL, limit);
    }
  }

  private async resolve(question: Question, protocol: DnsProtocol): Promise<DnsAnswer> {
    const client = this.opts.client();
    const labels = dnsLabels(question.type, protocol, client);
    const { metrics } = this.opts;
    metrics.requests.inc(labels);
    if (client === undefined) {
      this.access(question, undefined, 'unknown source', 0);
      return SERVFAIL;
    }
    if (question.type === 'A' || question.type === 'AAAA') {
      const r = this.store.lookup(client, question.name, question.type);
      if (r.kind === 'answer') {
        this.access(question, client, r.answers.length === 0 ? 'no records' : 'success', r.answers.length);
        return { rcode: RCODE.NOERROR, authoritative: true, answers: r.answers, additionals: [] };
      }
    }
    if (!(await this.forwardSlot(protocol))) {
      this.access(question, client, `not forwarded: ${MAX_FORWARDS_IN_FLIGHT} forwards in flight`, 0);
      return SERVFAIL;
    }
    metrics.upstreamRequests.inc(labels);
    const end = metrics.upstreamDuration.startTimer(labels);
    try {
      const a = await this.forwarder.forward(question, this.closing.signal);
      this.access(question, client, 'forwarded', a.answers.length);
      return a;
    } catch (e) {
      metrics.upstreamFailures.inc(labels);
      this.access(question, client, `forwarding failed (${describeError(e)})`, 0);
      return SERVFAIL;
    } finally {
      end();
      this.forwards--;
      this.forwardWaiters.shift()?.();
    }
  }

  /** Takes one of the proxy's forward slots: UDP only if one is free now, TCP once one is; false when closed or UDP is over the cap. */
  private async forwardSlot(protocol: DnsProtocol): Promise<boolean> {
    while (this.forwards >= MAX_FORWARDS_IN_FLIGHT && protocol === 'tcp' && !this.closed) {
      this.opts.log.debug(
        { waiting: this.forwardWaiters.length + 1 },
        `DNS TCP query waits: ${MAX_FORWARDS_IN_FLIGHT} forwards in flight`,
      );
      await new Promise<void>((resolve) => this.forwardWaiters.push(resolve));
    }
    if (this.closed || this.forwards >= MAX_FORWARDS_IN_FLIGHT) return false;
    this.forwards++;
    return true;
  }

  /** ztunnel's DNS access log line, at debug. */
  private access(q: Question, client: DnsClient | undefined, result: string, endpoints: number): void {
    this.opts.log.debug(
      {
        'src.workload': client?.name ?? 'unknown',
        'src.namespace': client?.namespace ?? 'unknown',
        query: q.type,
        domain: q.name,
        result,
        endpoints,
      },
      'dns',
    );
  }
}

function closeListeners(l: DnsListeners): Promise<unknown> {
  return Promise.all([
    ...l.udp.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
    ...l.tcp.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
  ]);
}
