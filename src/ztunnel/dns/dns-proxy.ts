import { setMaxListeners } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Question } from 'dns-packet';
import type { Logger } from '../../lib/log.js';
import { describeError, MeshError } from '../../lib/errors.js';
import type { ProxyState } from '../state/proxy-state.js';
import { DnsForwarder, type DnsUpstreamSockets } from './dns-forwarder.js';
import { RCODE, type DnsAnswer } from './dns-message.js';
import { DnsMetrics, dnsLabels, type DnsProtocol } from './dns-metrics.js';
import type { DnsListen } from './dns-sockets.js';
import { DnsStore, type DnsClient, type DnsStoreOptions } from './dns-store.js';
import { DnsTransport } from './dns-transport.js';
import type { UpstreamConfig } from './resolv-conf.js';

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
 * ztunnel's DNS proxy for one workload (ztunnel `src/dns/server.rs` `Server`): over UDP and TCP (`DnsTransport`), A and AAAA for the
 * hosts ztunnel knows are answered from its state (`DnsStore`), authoritative, TTL 30 s; everything else goes
 * upstream (`DnsForwarder`). A UDP answer larger than the client takes is truncated with TC set, so it asks again
 * over TCP. A malformed query gets FORMERR (or is dropped when it has no header); a TCP frame longer than any
 * query closes that connection. Nothing a client sends disturbs other queries.
 */
export class DnsProxy {
  private readonly store: DnsStore;
  private readonly forwarder: DnsForwarder;
  private readonly transport: DnsTransport;
  private closed = false;
  /** Cancels the forwards in flight when the proxy closes. */
  private readonly closing = new AbortController();
  /** Forwards running now (at most MAX_FORWARDS_IN_FLIGHT), and TCP queries waiting for one to finish. */
  private forwards = 0;
  private readonly forwardWaiters: (() => void)[] = [];

  constructor(private readonly opts: DnsProxyOptions) {
    this.store = new DnsStore(opts.state, opts);
    this.forwarder = new DnsForwarder(opts.upstream, opts.upstreamSockets);
    this.transport = new DnsTransport({
      name: 'DNS proxy',
      listen: opts.listen,
      resolve: (q, protocol) => this.resolve(q.question, protocol),
      codes: { badQuery: 'ZT_ERR_DNS_BAD_QUERY', unencodable: 'ZT_ERR_DNS_UPSTREAM' },
      log: opts.log,
    });
    // Each forward in flight listens for the abort.
    setMaxListeners(MAX_FORWARDS_IN_FLIGHT, this.closing.signal);
  }

  /**
   * Binds the listeners and starts answering; once only. When close() comes while binding, the listeners are
   * closed as soon as they are bound.
   */
  start(): Promise<void> {
    return this.transport.start();
  }

  /** Where the proxy listens, once started. */
  addresses(): { udp: AddressInfo[]; tcp: AddressInfo[] } {
    return this.transport.addresses();
  }

  /**
   * Stops listening, closes open TCP connections and cancels the forwards in flight at once; resolves when the
   * listeners and every upstream socket are closed.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort(new MeshError('ZT_ERR_SHUTTING_DOWN', 'the DNS proxy closed'));
    for (const wake of this.forwardWaiters.splice(0)) wake();
    await this.transport.close();
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
