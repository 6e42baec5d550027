import {
  encode,
  encodingLength,
  RECURSION_AVAILABLE,
  AUTHORITATIVE_ANSWER,
  TRUNCATED_RESPONSE,
  decode,
  type Answer,
  type OptAnswer,
  type Packet,
  type Question,
} from 'dns-packet';

/** Response codes (RFC 1035 4.1.1). */
export const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
export type Rcode = (typeof RCODE)[keyof typeof RCODE];

/** The UDP payload every DNS peer takes (RFC 1035 4.2.1); more only when the query's EDNS says so. */
const MIN_UDP_PAYLOAD = 512;
/** The largest message a TCP frame's 16-bit length allows (RFC 1035 4.2.2). */
export const MAX_TCP_MESSAGE = 65_535;
/** The largest UDP payload worth answering with: an IPv4 datagram's 65,535 bytes less its IP and UDP headers. */
const MAX_UDP_PAYLOAD = 65_507;

const HEADER_BYTES = 12;
const QR = 0x8000;
const OPCODE_SHIFT = 11;
const OPCODE_QUERY = 0;
const RD = 0x0100;
const CD = 0x0010;
const EDNS_DO = 0x8000;

/** A query the proxy can answer: one question, and what its response must echo. */
export interface DnsQuery {
  readonly id: number;
  readonly question: Question;
  /** The header bits a response copies (RD, CD). */
  readonly echoFlags: number;
  /** The query's EDNS record, if any. */
  readonly edns: OptAnswer | undefined;
}

/** A query, a response to send at once (FORMERR, NOTIMP), or nothing at all: too short to carry an ID. */
export type ParsedQuery = { readonly query: DnsQuery } | { readonly reply: Buffer } | undefined;

/**
 * Reads a query as hickory's server does for ztunnel (ztunnel `src/dns/handler.rs`): a message that is a response,
 * undecodable or without exactly one question gets FORMERR, an opcode other than QUERY gets NOTIMP, and one too
 * short for a header is dropped.
 */
export function parseQuery(buf: Buffer): ParsedQuery {
  if (buf.length < HEADER_BYTES) return undefined;
  const id = buf.readUInt16BE(0);
  const flags = buf.readUInt16BE(2);
  const echoFlags = flags & (RD | CD);
  const error = (rcode: Rcode): ParsedQuery => ({
    reply: encode({ type: 'response', id, flags: echoFlags | RECURSION_AVAILABLE | rcode }),
  });
  if ((flags & QR) !== 0) return error(RCODE.FORMERR);
  if (((flags >> OPCODE_SHIFT) & 0xf) !== OPCODE_QUERY) return error(RCODE.NOTIMP);
  let packet: Packet;
  try {
    packet = decode(buf);
  } catch {
    return error(RCODE.FORMERR);
  }
  const question = packet.questions?.length === 1 ? packet.questions[0] : undefined;
  if (question === undefined) return error(RCODE.FORMERR);
  const edns = packet.additionals?.find((a): a is OptAnswer => a.type === 'OPT');
  return { query: { id, question, echoFlags, edns } };
}

/** What the proxy answers: a response code, its records, and whether it is their authority. */
export interface DnsAnswer {
  readonly rcode: Rcode;
  readonly authoritative: boolean;
  readonly answers: readonly Answer[];
  /** The authority section (a zone's SOA with a negative answer); none when left out. */
  readonly authorities?: readonly Answer[];
  readonly additionals: readonly Answer[];
}

/** The largest UDP response the client takes: its EDNS payload size, at least 512 (hickory `response_edns`). */
export function udpLimit(q: DnsQuery): number {
  return Math.min(Math.max(q.edns?.udpPayloadSize ?? MIN_UDP_PAYLOAD, MIN_UDP_PAYLOAD), MAX_UDP_PAYLOAD);
}

/**
 * The response to `q`, at most `limit` bytes: with EDNS when the query had it, and when the records do not fit,
 * as many answers as do, no authority or additional records and TC set, so the client retries over TCP (RFC 7766 5).
 */
export function encodeResponse(q: DnsQuery, a: DnsAnswer, limit: number): Buffer {
  const opt: Answer[] =
    q.edns === undefined
      ? []
      : [
          {
            type: 'OPT',
            name: '.',
            udpPayloadSize: Math.max(q.edns.udpPayloadSize, MIN_UDP_PAYLOAD),
            extendedRcode: 0,
            ednsVersion: q.edns.ednsVersion,
            flags: q.edns.flags & EDNS_DO,
            flag_do: (q.edns.flags & EDNS_DO) !== 0,
            options: [],
          },
        ];
  const flags = q.echoFlags | RECURSION_AVAILABLE | (a.authoritative ? AUTHORITATIVE_ANSWER : 0) | a.rcode;
  const packet = (
    answers: readonly Answer[],
    authorities: readonly Answer[],
    additionals: readonly Answer[],
    tc: number,
  ): Packet => ({
    type: 'response',
    id: q.id,
    flags: flags | tc,
    questions: [q.question],
    answers: [...answers],
    authorities: [...authorities],
    additionals: [...additionals, ...opt],
  });
  const whole = packet(a.answers, a.authorities ?? [], a.additionals, 0);
  if (encodingLength(whole) <= limit) return encode(whole);
  // The most answers that fit, by bisection: encodingLength grows with every answer.
  let lo = 0;
  let hi = a.answers.length - 1;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (encodingLength(packet(a.answers.slice(0, mid), [], [], TRUNCATED_RESPONSE)) <= limit) lo = mid;
    else hi = mid - 1;
  }
  return encode(packet(a.answers.slice(0, lo), [], [], TRUNCATED_RESPONSE));
}
