import { MeshError } from '../../src/lib/errors.js';
import type { HeaderBlockDecoder, HeaderBlockEncoder, HeaderField } from '../../src/ztunnel/h2/header-block.js';

/**
 * A stand-in for the HPACK codec in tests of the framing layer: it writes and reads only RFC 7541's static-table
 * indexed fields (§6.1) and literals without indexing (§6.2.2, plain strings), which is valid HPACK any decoder
 * accepts, and never touches a dynamic table. Anything else (Huffman, dynamic table) is a COMPRESSION error.
 */
const STATIC_TABLE: readonly HeaderField[] = [
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'], [':scheme', 'http'], [':scheme', 'https'],
  [':status', '200'], [':status', '204'], [':status', '206'], [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'],
  ['accept-charset', ''], ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''],
  ['access-control-allow-origin', ''], ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''], ['content-disposition', ''],
  ['content-encoding', ''], ['content-language', ''], ['content-length', ''], ['content-location', ''], ['content-range', ''], ['content-type', ''],
  ['cookie', ''], ['date', ''], ['etag', ''], ['expect', ''], ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''], ['if-modified-since', ''],
  ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''], ['last-modified', ''], ['link', ''], ['location', ''], ['max-forwards', ''],
  ['proxy-authenticate', ''], ['proxy-authorization', ''], ['range', ''], ['referer', ''], ['refresh', ''], ['retry-after', ''], ['server', ''],
  ['set-cookie', ''], ['strict-transport-security', ''], ['transfer-encoding', ''], ['user-agent', ''], ['vary', ''], ['via', ''], ['www-authenticate', ''],
];

function writeInt(out: number[], first: number, prefixBits: number, n: number): void {
  const max = (1 << prefixBits) - 1;
  if (n < max) {
    out.push(first | n);
    return;
  }
  out.push(first | max);
  let rest = n - max;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
}

function writeString(out: number[], s: string): void {
  const bytes = Buffer.from(s, 'latin1');
  writeInt(out, 0, 7, bytes.length);
  for (const b of bytes) out.push(b);
}

export class StaticHeaderEncoder implements HeaderBlockEncoder {
  encode(fields: readonly HeaderField[]): Buffer {
    const out: number[] = [];
    for (const [name, value] of fields) {
      const exact = STATIC_TABLE.findIndex(([n, v]) => n === name && v === value);
      if (exact >= 0) {
        writeInt(out, 0x80, 7, exact + 1);
        continue;
      }
      const byName = STATIC_TABLE.findIndex(([n]) => n === name);
      if (byName >= 0) writeInt(out, 0x00, 4, byName + 1);
      else {
        out.push(0x00);
        writeString(out, name);
      }
      writeString(out, value);
    }
    return Buffer.from(out);
  }

  setPeerMaxTableSize(): void {
    // Never uses the dynamic table, so any size fits.
  }
}

export class StaticHeaderDecoder implements HeaderBlockDecoder {
  decode(block: Uint8Array): HeaderField[] {
    let off = 0;
    const fail = (why: string): never => {
      throw new MeshError('H2_ERR_COMPRESSION', `test codec: ${why} at byte ${off}`);
    };
    const readInt = (prefixBits: number): number => {
      const max = (1 << prefixBits) - 1;
      let n = block[off++]! & max;
      if (n < max) return n;
      for (let shift = 0; ; shift += 7) {
        if (off >= block.length) fail('truncated integer');
        const b = block[off++]!;
        n += (b & 0x7f) * 2 ** shift;
        if ((b & 0x80) === 0) return n;
      }
    };
    const readString = (): string => {
      if ((block[off]! & 0x80) !== 0) fail('Huffman-coded string');
      const len = readInt(7);
      if (off + len > block.length) fail('truncated string');
      const s = Buffer.from(block.subarray(off, off + len)).toString('latin1');
      off += len;
      return s;
    };
    const fromTable = (index: number): HeaderField => STATIC_TABLE[index - 1] ?? fail(`index ${index} outside the static table`);
    const fields: HeaderField[] = [];
    while (off < block.length) {
      const b = block[off]!;
      if (b & 0x80) fields.push(fromTable(readInt(7)));
      else if ((b & 0xe0) === 0) {
        const index = readInt(4);
        const name = index === 0 ? readString() : fromTable(index)[0];
        fields.push([name, readString()]);
      } else fail(`representation 0x${b.toString(16)} needs a dynamic table`);
    }
    return fields;
  }
}
