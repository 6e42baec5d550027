/**
 * The few DER encodings a certificate request and a workload certificate need (X.690 §8, §10: definite lengths,
 * minimal forms). Written by hand so that a ztunnel makes its CSRs, and its local CA signs, with `node:crypto`
 * alone: @peculiar/x509 and its ASN.1 schemas cost a process 12–16 MiB of RSS (docs/performance.md, "Idle
 * ztunnel: what it loads").
 */

/** One TLV: `tag`, the definite length of `content`, then `content`. */
export function tlv(tag: number, ...content: readonly Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  let head: Buffer;
  if (n < 0x80) {
    head = Buffer.from([tag, n]);
  } else {
    const len: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) len.unshift(v & 0xff);
    head = Buffer.from([tag, 0x80 | len.length, ...len]);
  }
  return Buffer.concat([head, body]);
}

export const sequence = (...content: readonly Buffer[]): Buffer => tlv(0x30, ...content);
export const set = (...content: readonly Buffer[]): Buffer => tlv(0x31, ...content);
export const octetString = (content: Buffer): Buffer => tlv(0x04, content);
export const booleanTrue = (): Buffer => tlv(0x01, Buffer.from([0xff]));
/** A BIT STRING of whole bytes (no unused bits). */
export const bitString = (content: Buffer): Buffer => tlv(0x03, Buffer.from([0]), content);

/** A non-negative INTEGER from its big-endian magnitude, in its minimal two's-complement form. */
export function unsignedInteger(magnitude: Buffer): Buffer {
  let i = 0;
  while (i < magnitude.length && magnitude[i] === 0) i++;
  const bytes = magnitude.subarray(i);
  return tlv(0x02, bytes.length === 0 || (bytes[0]! & 0x80) !== 0 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

/** A non-negative INTEGER below 2^31. */
export function smallInteger(v: number): Buffer {
  const bytes: number[] = [];
  for (let x = v; x > 0; x = Math.floor(x / 256)) bytes.unshift(x & 0xff);
  return unsignedInteger(Buffer.from(bytes));
}

export const nullValue = (): Buffer => tlv(0x05);

/** RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050, to the second, in UTC. */
export function time(d: Date): Buffer {
  const iso = d.toISOString();
  const digits = iso.slice(0, 19).replace(/[-:T]/g, '') + 'Z';
  const year = d.getUTCFullYear();
  return year >= 1950 && year < 2050
    ? tlv(0x17, Buffer.from(digits.slice(2), 'ascii'))
    : tlv(0x18, Buffer.from(digits, 'ascii'));
}

/** An OBJECT IDENTIFIER from its dotted form. */
export function objectIdentifier(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  const out: number[] = [40 * arcs[0]! + arcs[1]!];
  for (const arc of arcs.slice(2)) {
    const base128: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) base128.unshift(0x80 | (v & 0x7f));
    out.push(...base128);
  }
  return tlv(0x06, Buffer.from(out));
}

/** A context-specific tag `[n]`: constructed (EXPLICIT, or IMPLICIT of a constructed type) or primitive. */
export const contextTag = (n: number, constructed: boolean, ...content: readonly Buffer[]): Buffer =>
  tlv((constructed ? 0xa0 : 0x80) | n, ...content);
