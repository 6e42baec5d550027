/** Huffman-codes string literals (RFC 7541 §5.2), padding the last byte with the most significant bits of EOS. */
import { HUFFMAN_CODE } from './huffman-code.js';

/** The octets `s` (latin1, one char per octet) takes Huffman-coded. */
export function huffmanEncodedLength(s: string): number {
  let bits = 0;
  for (let i = 0; i < s.length; i++) bits += HUFFMAN_CODE[(s.charCodeAt(i) & 0xff) * 2 + 1]!;
  return Math.ceil(bits / 8);
}

/** Code bits moved into the accumulator at once: with at most 7 bits pending, 31 bits stay within int32 arithmetic. */
const CHUNK_BITS = 24;

/** Writes `s` Huffman-coded into `out` at `pos` (room for huffmanEncodedLength(s) octets); returns the position after it. */
export function huffmanEncode(s: string, out: Buffer, pos: number): number {
  let acc = 0; // pending bits, right-aligned; fewer than 8 between symbols
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const sym = s.charCodeAt(i) & 0xff;
    const code = HUFFMAN_CODE[sym * 2]!;
    let rest = HUFFMAN_CODE[sym * 2 + 1]!;
    while (rest > 0) {
      const take = rest > CHUNK_BITS ? rest - CHUNK_BITS : rest;
      rest -= take;
      acc = (acc << take) | ((code >>> rest) & ((1 << take) - 1));
      bits += take;
      while (bits >= 8) {
        bits -= 8;
        out[pos++] = acc >>> bits;
        acc &= (1 << bits) - 1;
      }
    }
  }
  if (bits > 0) out[pos++] = (acc << (8 - bits)) | (0xff >>> bits);
  return pos;
}
