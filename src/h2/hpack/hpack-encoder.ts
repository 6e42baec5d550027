/**
 * The HPACK encoder (RFC 7541) behind HeaderBlockEncoder, kept simple for HBONE's few, short header blocks:
 * a field in the static table is sent as its index, a name in it as an indexed name with a literal value,
 * anything else as a literal name and value, all "without indexing" (§6.2.2). It never inserts into its
 * dynamic table, so blocks never depend on each other and the table the peer keeps for it stays empty.
 * Strings are Huffman-coded when that is shorter (§5.2).
 *
 * The peer's decoder still tracks a maximum size for that table, starting at HTTP/2's default
 * SETTINGS_HEADER_TABLE_SIZE. When the peer lowers its SETTINGS_HEADER_TABLE_SIZE below it, §4.2 requires a
 * dynamic table size update at the start of the next block; the encoder sends one with the new size. When the
 * peer raises it, nothing is sent: the table stays at the smaller size, which an empty table always fits.
 */
import type { HeaderBlockEncoder, HeaderField } from '../header-block.js';
import { encodeInteger, MAX_INTEGER_BYTES } from './integer.js';
import { staticFieldIndex, staticNameIndex } from './static-table.js';
import { encodeStringLiteral, maxStringLiteralBytes } from './string-literal.js';

/** HTTP/2's initial SETTINGS_HEADER_TABLE_SIZE (RFC 9113 §6.5.2): the table size a peer's decoder starts with. */
export const DEFAULT_HEADER_TABLE_SIZE = 4096;

/** Output buffer before the first growth: an HBONE CONNECT's headers fit in it. */
const INITIAL_OUTPUT_BYTES = 512;

const INDEXED = 0x80;
const SIZE_UPDATE = 0x20;
const WITHOUT_INDEXING = 0x00;

export class HpackEncoder implements HeaderBlockEncoder {
  /** The table size the peer's decoder holds for this encoder. */
  private tableSize = DEFAULT_HEADER_TABLE_SIZE;
  private sizeUpdatePending = false;
  private out = Buffer.alloc(INITIAL_OUTPUT_BYTES);

  setPeerMaxTableSize(size: number): void {
    if (size >= this.tableSize) return;
    this.tableSize = size;
    this.sizeUpdatePending = true;
  }

  encode(fields: readonly HeaderField[]): Buffer {
    let pos = 0;
    if (this.sizeUpdatePending) {
      pos = encodeInteger(this.out, pos, this.tableSize, 5, SIZE_UPDATE);
      this.sizeUpdatePending = false;
    }
    for (const [name, value] of fields) {
      this.reserve(pos, MAX_INTEGER_BYTES + maxStringLiteralBytes(name) + maxStringLiteralBytes(value));
      const index = staticFieldIndex(name, value);
      if (index !== 0) {
        pos = encodeInteger(this.out, pos, index, 7, INDEXED);
        continue;
      }
      const nameIndex = staticNameIndex(name);
      pos = encodeInteger(this.out, pos, nameIndex, 4, WITHOUT_INDEXING);
      if (nameIndex === 0) pos = encodeStringLiteral(this.out, pos, name);
      pos = encodeStringLiteral(this.out, pos, value);
    }
    return Buffer.from(this.out.subarray(0, pos));
  }

  private reserve(pos: number, bytes: number): void {
    if (pos + bytes <= this.out.length) return;
    const out = Buffer.alloc(Math.max(pos + bytes, this.out.length * 2));
    this.out.copy(out, 0, 0, pos);
    this.out = out;
  }
}
