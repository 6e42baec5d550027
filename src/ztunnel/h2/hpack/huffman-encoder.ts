/** Huffman-codes string literals (RFC 7541 §5.2), padding the last byte with the most significant bits of EOS. */
import { HUFFMAN_CODE } from './huffman-code.js';

/** The octets `s` (latin1, one char per octet) takes Huffman-coded. */
export function huffmanEncodedLength(s: string): number {
  let bits = 0;
  for (let i = 0; i < s.length; i++) bits += HUFFMAN_CODE[(s.charCodeAt(i) & 0xff) * 2 + 1]!;
  return Math.ceil(bits / 8);
}

/** Writes `s` Huffman-coded into `out` at `pos` (room for huffmanEncodedLength(s) octets); returns the position after it. */
export function huffmanEncode(s: string, out: Buffer, pos: number): number {
  // Pending bits, most significant first; at most 7 + 30 of them, which a double holds exactly.
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const sym = s.charCodeAt(i) & 0xff;
    const length = HUFFMAN_CODE[sym * 2 + 1]!;
    acc = acc * 2 ** length + HUFFMAN_CODE[sym * 2]!;
    bits += length;
    while (bits >= 8) {
      bits -= 8;
      const unit = 2 ** bits;
      out[pos++] = Math.floor(acc / unit);
      acc %= unit;
    }
  }
  if (bits > 0) out[pos++] = (acc << (8 - bits)) | (0xff >>> bits);
  return pos;
}
