/** HPACK's integer representation (RFC 7541 §5.1): an N-bit prefix, then 7 bits per continuation byte. */
import type { BlockCursor } from './block-cursor.js';
import { compressionError } from './compression-error.js';

/**
 * The largest integer a decoder accepts. Nothing in a block we accept comes near it (indexes are bounded by
 * the tables, lengths by the block, table sizes by a 32-bit SETTINGS value), and a bound keeps the arithmetic
 * exact and a run of continuation bytes short.
 */
export const HPACK_MAX_INTEGER = 2 ** 32 - 1;

/** Continuation bytes that can still add bits below 2^32: 7 bits each above the prefix. */
const MAX_SHIFT = 28;

/** Reads an integer whose first byte (already consumed, at `c.pos - 1`) carries a `prefixBits`-bit prefix. */
export function decodeInteger(c: BlockCursor, firstByte: number, prefixBits: number, what: string): number {
  const start = c.pos - 1;
  const mask = (1 << prefixBits) - 1;
  let value = firstByte & mask;
  if (value < mask) return value;
  for (let shift = 0; ; shift += 7) {
    if (shift > MAX_SHIFT) throw compressionError(`${what} is an integer longer than 32 bits`, start);
    const b = c.next(what);
    value += (b & 0x7f) * 2 ** shift;
    if (value > HPACK_MAX_INTEGER) throw compressionError(`${what} is an integer above ${HPACK_MAX_INTEGER}`, start);
    if ((b & 0x80) === 0) return value;
  }
}

/** The bytes encodeInteger writes at most: the prefix byte and five continuation bytes. */
export const MAX_INTEGER_BYTES = 6;

/**
 * Writes `value` with a `prefixBits`-bit prefix into `out` at `pos`; `flags` are the representation's bits above
 * the prefix. Returns the position after it.
 */
export function encodeInteger(out: Buffer, pos: number, value: number, prefixBits: number, flags: number): number {
  const mask = (1 << prefixBits) - 1;
  if (value < mask) {
    out[pos++] = flags | value;
    return pos;
  }
  out[pos++] = flags | mask;
  let rest = value - mask;
  while (rest >= 0x80) {
    out[pos++] = (rest % 0x80) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  out[pos++] = rest;
  return pos;
}
