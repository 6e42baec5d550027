/**
 * HPACK's string literal (RFC 7541 §5.2): an H bit, a 7-bit-prefix length, then that many octets, raw or
 * Huffman-coded. Strings are latin1 on both sides (one char per octet), so field values that are not UTF-8 pass
 * through unchanged and a string's length is its size in octets.
 */
import type { BlockCursor } from './block-cursor.js';
import { compressionError } from './compression-error.js';
import { huffmanDecode } from './huffman-decoder.js';
import { huffmanEncode, huffmanEncodedLength } from './huffman-encoder.js';
import { decodeInteger, encodeInteger, MAX_INTEGER_BYTES } from './integer.js';

const HUFFMAN = 0x80;

export function decodeStringLiteral(c: BlockCursor, what: string): string {
  const first = c.next(`${what} length`);
  const length = decodeInteger(c, first, 7, `${what} length`);
  if (length > c.remaining)
    throw compressionError(`${what} of ${length} octets runs past the end of the block (${c.remaining} left)`, c.pos);
  const start = c.pos;
  c.pos += length;
  return (first & HUFFMAN) !== 0 ? huffmanDecode(c.bytes, start, c.pos) : c.bytes.toString('latin1', start, c.pos);
}

/** The most octets encodeStringLiteral writes for `s`. */
export function maxStringLiteralBytes(s: string): number {
  return MAX_INTEGER_BYTES + s.length;
}

/** Writes `s` into `out` at `pos`, Huffman-coded when that is shorter; returns the position after it. */
export function encodeStringLiteral(out: Buffer, pos: number, s: string): number {
  const huffmanLength = huffmanEncodedLength(s);
  if (huffmanLength < s.length) return huffmanEncode(s, out, encodeInteger(out, pos, huffmanLength, 7, HUFFMAN));
  pos = encodeInteger(out, pos, s.length, 7, 0);
  return pos + out.write(s, pos, 'latin1');
}
