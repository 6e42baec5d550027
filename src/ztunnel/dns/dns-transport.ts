import type { AddressInfo } from 'node:net';
import type net from 'node:net';
import type { ErrorCode } from '../../lib/errors.js';
import { describeError, MeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import {
  MAX_TCP_MESSAGE,
  RCODE,
  encodeResponse,
  parseQuery,
  udpLimit,
  type DnsAnswer,
  type DnsQuery,
} from './dns-message.js';
import type { DnsProtocol } from './dns-metrics.js';
import type { DnsListen, DnsListeners } from './dns-sockets.js';
import { FrameDecoder, frame } from './dns-tcp-frames.js';

/** A TCP connection with no query for this long is closed (hickory's request timeout in ztunnel `src/dns/server.rs`). */
const TCP_IDLE_TIMEOUT_MS = 5_000;
/**
 * The longest query taken over TCP. A query is one question plus EDNS options (cookies, padding to 468 bytes);
 * 4 KiB holds any a resolver sends, without buffering up to 64 KiB per connection for a peer that claims more.
 */
const MAX_TCP_QUERY_BYTES = 4_096;
/** Queries of one TCP connection answered at once (hickory's response buffer in ztunnel); more wait unread. */
const MAX_TCP_IN_FLIGHT = 32;

const SERVFAIL: DnsAnswer = { rcode: RCODE.SERVFAIL, authoritative: false, answers: [], additionals: [] };

/** The answer to one well-formed query (never rejects). */
export type DnsResolve = (query: DnsQuery, protocol: DnsProtocol) => Promise<DnsAnswer>;

export interface DnsTransportOptions {
  /** What the server is called in its log lines and errors ("DNS proxy"). */
  readonly name: string;
  readonly listen: DnsListen;
  readonly resolve: DnsResolve;
  /** The codes of its debug lines: a malformed query, and an answer that cannot be encoded (SERVFAIL instead). */
  readonly codes: { readonly badQuery: ErrorCode; readonly unencodable: ErrorCode };
  readonly log: Logger;
}

/**
 * A DNS server's sockets, as ztunnel's hickory server runs them (ztunnel `src/dns/server.rs`): queries over UDP and
 * TCP go to `resolve`, and its answer goes back, a UDP one truncated with TC set when larger than the client takes.
 * A message too short for a header is dropped; a malformed query gets FORMERR (or NOTIMP for another opcode) without
 * reaching `resolve`; a TCP frame longer than any query closes that connection. Nothing a client sends disturbs
 * other queries.
 */
export class DnsTransport {
  private listeners: DnsListeners | undefined;
  private readonly connections = new Set<net.Socket>();
  private started = false;
  private closed = false;
  /** Every query being answered, so close() returns once they are done. */
  private readonly answering = new Set<Promise<unknown>>();

  constructor(private readonly opts: DnsTransportOptions) {}

  /**
   * Binds the listeners and starts answering; once only. When close() comes while binding, the listeners are
   * closed as soon as they are bound.
   */
  async start(): Promise<void> {
    if (this.started)
      throw new MeshError('ZT_ERR_BIND', `the ${this.opts.name} was already started; make a new one to listen again`);
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
      `${this.opts.name} listening`,
    );
  }

  /** Where the server listens, once started. */
  addresses(): { udp: AddressInfo[]; tcp: AddressInfo[] } {
    return {
      udp: this.listeners?.udp.map((s) => s.address()) ?? [],
      tcp: this.listeners?.tcp.map((s) => s.address() as AddressInfo) ?? [],
    };
  }

  /** Stops listening and closes open TCP connections at once; resolves when the listeners are closed and every query in flight is done. */
  async close(): Promise<void> {
    this.closed = true;
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
          { code: this.opts.codes.badQuery, peer: c.remoteAddress },
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
        { code: this.opts.codes.badQuery, protocol, bytes: msg.length },
        parsed === undefined
          ? 'DNS message shorter than a header; dropped'
          : 'malformed DNS query; answered with an error',
      );
      return parsed?.reply;
    }
    const q = parsed.query;
    const limit = protocol === 'udp' ? udpLimit(q) : MAX_TCP_MESSAGE;
    const answer = await this.opts.resolve(q, protocol);
    try {
      return encodeResponse(q, answer, limit);
    } catch (e) {
      // An upstream record the encoder cannot write back.
      this.opts.log.debug(
        { code: this.opts.codes.unencodable, domain: q.question.name, error: describeError(e) },
        'cannot encode the upstream answer',
      );
      return encodeResponse(q, SERVFAIL, limit);
    }
  }
}

function closeListeners(l: DnsListeners): Promise<unknown> {
  return Promise.all([
    ...l.udp.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
    ...l.tcp.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
  ]);
}
