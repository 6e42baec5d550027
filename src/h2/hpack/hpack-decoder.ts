/**
 * The HPACK decoder (RFC 7541) behind HeaderBlockDecoder: one per connection, its dynamic table kept across
 * header blocks. Written by hand: Node's HPACK lives inside nghttp2, which node:http2 does not expose on its
 * own, and this layer exists to take node:http2 off the HBONE path; the codec is small, and RFC 7541's
 * examples and an independent implementation (python3-hpack, test/hpack-python.test.ts) pin it.
 *
 * Bounds: a table size update may not exceed `maxTableSize` and may only open a block (§4.2, §6.3); the
 * header list is counted as RFC 9113 §6.5.2 counts it (name + value + 32 per field) field by field, so a small
 * block referencing a large entry many times is refused as soon as it passes `maxHeaderListSize`, before the
 * list it would expand to is built.
 *
 * Field names and values are passed on as decoded: whether they make a message malformed (RFC 9113 §8.2.1) is
 * the message layer's call (`message-headers.ts`), a stream error, while the block itself decoded cleanly and
 * the dynamic table is in step.
 */
import type { HeaderBlockDecoder, HeaderBlockDecoderLimits, HeaderField } from '../header-block.js';
import { BlockCursor } from './block-cursor.js';
import { compressionError } from './compression-error.js';
import { DynamicTable, entrySize } from './dynamic-table.js';
import { decodeInteger } from './integer.js';
import { STATIC_TABLE } from './static-table.js';
import { decodeStringLiteral } from './string-literal.js';

/** First-byte patterns of the field representations (RFC 7541 §6). */
const INDEXED = 0x80; // 1xxxxxxx, 7-bit index (§6.1)
const INCREMENTAL_INDEXING = 0x40; // 01xxxxxx, 6-bit name index (§6.2.1)
const SIZE_UPDATE = 0x20; // 001xxxxx, 5-bit size (§6.3); 0000xxxx and 0001xxxx are literals with a 4-bit name index (§6.2.2, §6.2.3)

export class HpackDecoder implements HeaderBlockDecoder {
  private readonly table: DynamicTable;

  constructor(private readonly limits: HeaderBlockDecoderLimits) {
    this.table = new DynamicTable(limits.maxTableSize);
  }

  decode(block: Uint8Array): HeaderField[] {
    const c = new BlockCursor(block);
    const fields: HeaderField[] = [];
    let listSize = 0;
    while (c.remaining > 0) {
      const at = c.pos;
      const first = c.next('a field representation');
      let field: HeaderField;
      if ((first & INDEXED) !== 0) {
        field = this.entry(decodeInteger(c, first, 7, 'an index'), at);
      } else if ((first & INCREMENTAL_INDEXING) !== 0) {
        field = this.literal(c, first, 6, at);
        this.table.add(field);
      } else if ((first & SIZE_UPDATE) !== 0) {
        this.sizeUpdate(decodeInteger(c, first, 5, 'a table size update'), fields.length, at);
        continue;
      } else {
        field = this.literal(c, first, 4, at);
      }
      listSize += entrySize(field[0], field[1]);
      if (listSize > this.limits.maxHeaderListSize) {
        throw compressionError(
          `header list grows past SETTINGS_MAX_HEADER_LIST_SIZE ${this.limits.maxHeaderListSize} (field ${fields.length + 1})`,
          at,
        );
      }
      fields.push(field);
    }
    return fields;
  }

  /** Index space of §2.3.3: 1-61 the static table, from 62 on the dynamic table, newest first. */
  private entry(index: number, at: number): HeaderField {
    if (index === 0) throw compressionError('index 0', at);
    const field =
      index <= STATIC_TABLE.length ? STATIC_TABLE[index - 1] : this.table.get(index - STATIC_TABLE.length - 1);
    if (field === undefined) {
      throw compressionError(
        `index ${index} past the static table (61) and the dynamic table (${this.table.length} entries)`,
        at,
      );
    }
    return field;
  }

  /** A literal field (§6.2): a name index in the first byte's `prefixBits` (0 when a literal name follows), then the value. */
  private literal(c: BlockCursor, first: number, prefixBits: number, at: number): HeaderField {
    const nameIndex = decodeInteger(c, first, prefixBits, 'a name index');
    const name = nameIndex === 0 ? decodeStringLiteral(c, 'a field name') : this.entry(nameIndex, at)[0];
    return [name, decodeStringLiteral(c, 'a field value')];
  }

  private sizeUpdate(size: number, fieldsBefore: number, at: number): void {
    if (fieldsBefore > 0)
      throw compressionError('dynamic table size update after a field (allowed only at the start of a block)', at);
    if (size > this.limits.maxTableSize)
      throw compressionError(
        `dynamic table size update to ${size} above SETTINGS_HEADER_TABLE_SIZE ${this.limits.maxTableSize}`,
        at,
      );
    this.table.setMaxSize(size);
  }
}
