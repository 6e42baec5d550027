/**
 * Reading the DER a CA needs to read (X.690 §8.1: tag, definite length, content): a CSR's parts, and a
 * certificate's subject and public key. By hand for the reason der-writer.ts gives. Malformed input throws an
 * Error saying where; callers turn it into their own error code.
 */

/** One element: its tag, where it starts, where its content starts, and where it ends (exclusive). */
export interface Tlv {
  readonly tag: number;
  readonly start: number;
  readonly contentStart: number;
  readonly end: number;
}

/** Longest length field accepted: 4 bytes (a CSR or certificate is far smaller than 4 GiB). */
const MAX_LENGTH_BYTES = 4;

/** The element at `at`, which must end by `limit`. Only low tag numbers (every tag a CSR or certificate uses). */
export function readTlv(b: Buffer, at: number, limit = b.length): Tlv {
  if (at + 2 > limit) throw new Error(`DER element at ${at} is truncated`);
  const tag = b[at]!;
  if ((tag & 0x1f) === 0x1f) throw new Error(`DER element at ${at} has a high tag number`);
  const first = b[at + 1]!;
  let contentStart = at + 2;
  let length = first;
  if (first >= 0x80) {
    const n = first & 0x7f;
    if (n === 0 || n > MAX_LENGTH_BYTES)
      throw new Error(`DER element at ${at} has ${n === 0 ? 'an indefinite' : 'an oversized'} length`);
    if (contentStart + n > limit) throw new Error(`DER element at ${at} is truncated`);
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + b[contentStart + i]!;
    if (length < 0x80 || b[contentStart] === 0) throw new Error(`DER element at ${at} has a non-minimal length`);
    contentStart += n;
  }
  const end = contentStart + length;
  if (end > limit) throw new Error(`DER element at ${at} runs past its container`);
  return { tag, start: at, contentStart, end };
}

/** The elements inside constructed element `t`, which must fill it exactly. */
export function children(b: Buffer, t: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = t.contentStart; at < t.end;) {
    const c = readTlv(b, at, t.end);
    out.push(c);
    at = c.end;
  }
  return out;
}

/** `t` if it has `tag`, else an error naming `what`. */
export function expectTag(t: Tlv | undefined, tag: number, what: string): Tlv {
  if (t?.tag !== tag)
    throw new Error(
      `${what}: expected DER tag 0x${tag.toString(16)}, found ${t === undefined ? 'nothing' : `0x${t.tag.toString(16)}`}`,
    );
  return t;
}

export const content = (b: Buffer, t: Tlv): Buffer => b.subarray(t.contentStart, t.end);
export const whole = (b: Buffer, t: Tlv): Buffer => b.subarray(t.start, t.end);

/** An OBJECT IDENTIFIER's content in dotted form. */
export function oidString(c: Buffer): string {
  if (c.length === 0) throw new Error('empty OBJECT IDENTIFIER');
  const arcs = [Math.min(2, Math.floor(c[0]! / 40)), c[0]! - 40 * Math.min(2, Math.floor(c[0]! / 40))];
  let v = 0;
  for (let i = 1; i < c.length; i++) {
    v = v * 128 + (c[i]! & 0x7f);
    if ((c[i]! & 0x80) === 0) {
      arcs.push(v);
      v = 0;
    } else if (i === c.length - 1) {
      throw new Error('truncated OBJECT IDENTIFIER');
    }
  }
  return arcs.join('.');
}

export const TAG = { integer: 0x02, bitString: 0x03, octetString: 0x04, oid: 0x06, sequence: 0x30, set: 0x31 } as const;
