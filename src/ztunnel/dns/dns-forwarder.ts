import type dgram from 'node:dgram';
import type net from 'node:net';
import { randomInt } from 'node:crypto';
import { isIP } from 'node:net';
import { decode, encode, RECURSION_DESIRED, type Answer, type DecodedPacket, type Question } from 'dns-packet';
import { MeshError, describeError } from '../../lib/errors.js';
import { canonicalUnmappedIp, formatHostPort } from '../../lib/ip.js';
import { MAX_TCP_MESSAGE, RCODE, type DnsAnswer, type Rcode } from './dns-message.js';
import { FrameDecoder, frame } from './dns-tcp-frames.js';
import type { DnsNameserver, UpstreamConfig } from './resolv-conf.js';

/**
 * How the forwarder makes its sockets: on the host in local mode; in-pod, inside the pod's network namespace with
 * ztunnel's mark, so the pod's own DNS capture lets them out.
 */
export interface DnsUpstreamSockets {
  /** A UDP socket of `family`, bound to an ephemeral port. */
  udp(family: 4 | 6): Promise<dgram.Socket>;
  /** A TCP socket of `family`, not yet connected. */
  tcp(family: 4 | 6): net.Socket;
}

/** Upstream answers that mean "ask another server" (as hickory's name server pool treats them). */
const RETRY_RCODES: ReadonlySet<string> = new Set(['SERVFAIL', 'REFUSED']);
const RCODES: Readonly<Record<string, Rcode>> = { NOERROR: RCODE.NOERROR, NXDOMAIN: RCODE.NXDOMAIN };

/**
 * Forwards a question the proxy does not own to the upstream nameservers, as ztunnel's forwarder (a hickory
 * resolver without search domains: ztunnel `src/dns/forwarder.rs`) does: over UDP, and again over TCP when the
 * answer came truncated; each nameserver in turn, `attempts` rounds, `timeoutMs` per try. Only a response from
 * the server asked, with the query's ID and question, counts. The answer keeps the upstream's code, answers and
 * additionals (and with `keepAuthorities` its authority section, as CoreDNS's forward plugin passes the whole
 * response on), never as authoritative; the proxy owns the rest of the message.
 */
export class DnsForwarder {
  constructor(
    private readonly upstream: UpstreamConfig,
    private readonly sockets: DnsUpstreamSockets,
    private readonly options: { readonly keepAuthorities: boolean } = { keepAuthorities: false },
  ) {}

  /**
   * The upstream's answer to `question`; ZT_ERR_DNS_UPSTREAM when no nameserver gave one. `signal` cancels: the
   * try in flight releases its socket at once and the forward rejects with the signal's reason.
   */
  async forward(question: Question, signal?: AbortSignal): Promise<DnsAnswer> {
    const failures: string[] = [];
    for (let round = 0; round < this.upstream.attempts; round++) {
      for (const ns of this.upstream.nameservers) {
        signal?.throwIfAborted();
        try {
          const r = await this.ask(ns, question, signal);
          if (r.rcode === undefined || RETRY_RCODES.has(r.rcode) || RCODES[r.rcode] === undefined) {
            failures.push(`${formatHostPort(ns.host, ns.port)}: ${r.rcode ?? 'no response code'}`);
            continue;
          }
          return {
            rcode: RCODES[r.rcode]!,
            authoritative: false,
            answers: r.answers ?? [],
            ...(this.options.keepAuthorities ? { authorities: r.authorities ?? [] } : {}),
            additionals: (r.additionals ?? []).filter((a: Answer) => a.type !== 'OPT'),
          };
        } catch (e) {
          signal?.throwIfAborted();
          failures.push(`${formatHostPort(ns.host, ns.port)}: ${describeError(e)}`);
        }
      }
    }
    throw new MeshError(
      'ZT_ERR_DNS_UPSTREAM',
      `no upstream answered ${question.type} ${question.name}: ${failures.join('; ')}`,
    );
  }

  private async ask(
    ns: DnsNameserver,
    question: Question,
    signal: AbortSignal | undefined,
  ): Promise<DecodedPacket & { rcode?: string }> {
    const id = randomInt(0x10000);
    const query = encode({
      type: 'query',
      id,
      flags: RECURSION_DESIRED,
      questions: [{ name: question.name, type: question.type, class: question.class ?? 'IN' }],
    });
    const family = isIP(withoutScope(ns.host)) === 6 ? 6 : 4;
    const udp = await this.exchange(id, question, signal, (accept, fail) =>
      this.udpExchange(ns, family, query, accept, fail),
    );
    if (!udp.flag_tc) return udp;
    return this.exchange(id, question, signal, (accept, fail) => this.tcpExchange(ns, family, query, accept, fail));
  }

  /**
   * Runs one try: `start` sends the query and hands every message it receives to `accept`; the first that answers
   * it wins, within the timeout, unless `signal` aborts first. `start` returns how to release its socket.
   */
  private exchange(
    id: number,
    question: Question,
    signal: AbortSignal | undefined,
    start: (accept: (msg: Buffer) => void, fail: (e: unknown) => void) => Promise<() => void>,
  ): Promise<DecodedPacket & { rcode?: string }> {
    return new Promise((resolve, reject) => {
      let release: (() => void) | undefined;
      let done = false;
      const onAbort = (): void => finish(signal?.reason);
      const finish = (e: unknown, p?: DecodedPacket): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        release?.();
        if (p === undefined) reject(e instanceof Error ? e : new Error(String(e)));
        else resolve(p);
      };
      const timer = setTimeout(
        () => finish(new Error(`no answer within ${this.upstream.timeoutMs} ms`)),
        this.upstream.timeoutMs,
      );
      if (signal?.aborted === true) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
      const accept = (msg: Buffer): void => {
        let p: DecodedPacket;
        try {
          p = decode(msg);
        } catch {
          return;
        }
        const q = p.questions?.[0];
        if (
          p.id === id &&
          p.flag_qr &&
          q !== undefined &&
          q.type === question.type &&
          q.name.toLowerCase() === question.name.toLowerCase()
        )
          finish(undefined, p);
      };
      start(accept, finish).then(
        (r) => {
          if (done) r();
          else release = r;
        },
        (e: unknown) => finish(e),
      );
    });
  }

  private async udpExchange(
    ns: DnsNameserver,
    family: 4 | 6,
    query: Buffer,
    accept: (msg: Buffer) => void,
    fail: (e: unknown) => void,
  ): Promise<() => void> {
    const s = await this.sockets.udp(family);
    const server = canonicalUnmappedIp(withoutScope(ns.host));
    s.on('message', (msg, rinfo) => {
      if (rinfo.port === ns.port && canonicalUnmappedIp(withoutScope(rinfo.address)) === server) accept(msg);
    });
    s.on('error', fail);
    s.send(query, ns.port, ns.host, (e) => {
      if (e !== null) fail(e);
    });
    return () => s.close();
  }

  private tcpExchange(
    ns: DnsNameserver,
    family: 4 | 6,
    query: Buffer,
    accept: (msg: Buffer) => void,
    fail: (e: unknown) => void,
  ): Promise<() => void> {
    const s = this.sockets.tcp(family);
    const frames = new FrameDecoder(MAX_TCP_MESSAGE);
    s.on('data', (chunk: Buffer) => {
      for (const msg of frames.push(chunk) ?? []) accept(msg);
    });
    s.on('error', fail);
    s.on('end', () => fail(new Error('closed before answering')));
    s.connect(ns.port, ns.host, () => s.write(frame(query)));
    return Promise.resolve(() => s.destroy());
  }
}

/** An IPv6 literal without its zone (`fe80::1%eth0`): the zone names an interface, not part of the address. */
const withoutScope = (host: string): string => host.replace(/%.*/, '');
