import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { H2ErrorCode } from '../frame.js';
import { H2Error } from '../h2-error.js';
import type { HeaderField } from '../header-block.js';
import { HpackDecoder } from './hpack-decoder.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const decoder = (maxTableSize = 4096, maxHeaderListSize = 1 << 16): HpackDecoder =>
  new HpackDecoder({ maxTableSize, maxHeaderListSize });

/** Asserts `block` is refused with H2_ERR_COMPRESSION, a message matching `message`, at byte `offset`. */
function refuses(d: HpackDecoder, block: Uint8Array, message: RegExp, offset: number): void {
  assert.throws(
    () => d.decode(block),
    (e: unknown) =>
      e instanceof H2Error &&
      e.code === H2ErrorCode.COMPRESSION_ERROR &&
      message.test(e.message) &&
      e.message.endsWith(`at byte ${offset} of the header block`),
  );
}

/** The decoder's dynamic table, newest first, read through indexed references (62 on), which leave it unchanged. */
function dynamicTable(d: HpackDecoder): HeaderField[] {
  const entries: HeaderField[] = [];
  for (let index = 62; index < 127; index++) {
    try {
      entries.push(...d.decode(Uint8Array.of(0x80 | index)));
    } catch {
      break;
    }
  }
  return entries;
}

const h = (name: string, value: string): HeaderField => [name, value];

// RFC 7541 Appendix C, byte for byte: each series runs on one decoder, as on one connection.
const C3_C4_HEADERS = [
  [h(':method', 'GET'), h(':scheme', 'http'), h(':path', '/'), h(':authority', 'www.example.com')],
  [
    h(':method', 'GET'),
    h(':scheme', 'http'),
    h(':path', '/'),
    h(':authority', 'www.example.com'),
    h('cache-control', 'no-cache'),
  ],
  [
    h(':method', 'GET'),
    h(':scheme', 'https'),
    h(':path', '/index.html'),
    h(':authority', 'www.example.com'),
    h('custom-key', 'custom-value'),
  ],
];
const C3_C4_TABLES = [
  [h(':authority', 'www.example.com')],
  [h('cache-control', 'no-cache'), h(':authority', 'www.example.com')],
  [h('custom-key', 'custom-value'), h('cache-control', 'no-cache'), h(':authority', 'www.example.com')],
];
const DATE_21 = 'Mon, 21 Oct 2013 20:13:21 GMT';
const DATE_22 = 'Mon, 21 Oct 2013 20:13:22 GMT';
const LOCATION = 'https://www.example.com';
const COOKIE = 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1';
const C5_C6_HEADERS = [
  [h(':status', '302'), h('cache-control', 'private'), h('date', DATE_21), h('location', LOCATION)],
  [h(':status', '307'), h('cache-control', 'private'), h('date', DATE_21), h('location', LOCATION)],
  [
    h(':status', '200'),
    h('cache-control', 'private'),
    h('date', DATE_22),
    h('location', LOCATION),
    h('content-encoding', 'gzip'),
    h('set-cookie', COOKIE),
  ],
];
const C5_C6_TABLES = [
  [h('location', LOCATION), h('date', DATE_21), h('cache-control', 'private'), h(':status', '302')],
  [h(':status', '307'), h('location', LOCATION), h('date', DATE_21), h('cache-control', 'private')],
  [h('set-cookie', COOKIE), h('content-encoding', 'gzip'), h('date', DATE_22)],
];

function series(maxTableSize: number, blocks: string[], headers: HeaderField[][], tables: HeaderField[][]): void {
  const d = decoder(maxTableSize);
  blocks.forEach((block, i) => {
    assert.deepEqual(d.decode(hex(block)), headers[i], `block ${i + 1}`);
    assert.deepEqual(dynamicTable(d), tables[i], `dynamic table after block ${i + 1}`);
  });
}

describe('RFC 7541 Appendix C examples', () => {
  test('C.2.1 literal with indexing enters the dynamic table', () => {
    const d = decoder();
    assert.deepEqual(d.decode(hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572')), [
      h('custom-key', 'custom-header'),
    ]);
    assert.deepEqual(dynamicTable(d), [h('custom-key', 'custom-header')]);
  });

  test('C.2.2 literal without indexing and C.2.3 never indexed leave the table empty; C.2.4 indexed static field', () => {
    const d = decoder();
    assert.deepEqual(d.decode(hex('040c 2f73 616d 706c 652f 7061 7468')), [h(':path', '/sample/path')]);
    assert.deepEqual(d.decode(hex('1008 7061 7373 776f 7264 0673 6563 7265 74')), [h('password', 'secret')]);
    assert.deepEqual(d.decode(hex('82')), [h(':method', 'GET')]);
    assert.deepEqual(dynamicTable(d), []);
  });

  test('C.3 requests without Huffman coding', () => {
    series(
      4096,
      [
        '8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
        '8286 84be 5808 6e6f 2d63 6163 6865',
        '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65',
      ],
      C3_C4_HEADERS,
      C3_C4_TABLES,
    );
  });

  test('C.4 requests with Huffman coding', () => {
    series(
      4096,
      [
        '8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff',
        '8286 84be 5886 a8eb 1064 9cbf',
        '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf',
      ],
      C3_C4_HEADERS,
      C3_C4_TABLES,
    );
  });

  test('C.5 responses without Huffman coding, with evictions from a 256-octet table', () => {
    series(
      256,
      [
        `4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768
         7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d`,
        '4803 3330 37c1 c0bf',
        `88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153
         444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31`,
      ],
      C5_C6_HEADERS,
      C5_C6_TABLES,
    );
  });

  test('C.6 responses with Huffman coding, with evictions from a 256-octet table', () => {
    series(
      256,
      [
        `4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8
         e9ae 82ae 43d3`,
        '4883 640e ffc1 c0bf',
        `88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b
         3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07`,
      ],
      C5_C6_HEADERS,
      C5_C6_TABLES,
    );
  });
});

describe('decoding errors (H2_ERR_COMPRESSION, with what and where)', () => {
  test('index 0 is a decoding error (§6.1)', () => {
    refuses(decoder(), hex('82 80'), /HPACK: index 0 at/, 1);
  });

  test('an index past the static and dynamic tables, as a field and as a name', () => {
    refuses(decoder(), hex('82 be'), /index 62 past the static table \(61\) and the dynamic table \(0 entries\)/, 1);
    const d = decoder();
    d.decode(hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572'));
    assert.deepEqual(d.decode(hex('be')), [h('custom-key', 'custom-header')]);
    refuses(d, hex('bf'), /index 63 past .* \(1 entries\)/, 0);
    refuses(decoder(), hex('82 0f30 0161'), /index 63 past/, 1);
  });

  test('a dynamic table size update is allowed only before the first field (§4.2)', () => {
    const d = decoder();
    assert.deepEqual(
      d.decode(hex('3f e1 1f 20 82')),
      [h(':method', 'GET')],
      'updates to 4096 and 0 before the first field',
    );
    refuses(decoder(), hex('82 20'), /table size update after a field/, 1);
  });

  test('a dynamic table size update above SETTINGS_HEADER_TABLE_SIZE is refused (§6.3)', () => {
    refuses(decoder(100), hex('3f 46'), /size update to 101 above SETTINGS_HEADER_TABLE_SIZE 100/, 0);
    assert.deepEqual(decoder(100).decode(hex('3f 45 82')), [h(':method', 'GET')], 'exactly 100 is allowed');
  });

  test('a size update shrinking the table evicts, and growing it back does not restore entries', () => {
    const d = decoder();
    d.decode(hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572'));
    d.decode(hex('20 3f e1 1f'));
    assert.deepEqual(dynamicTable(d), []);
  });

  test('an integer longer than 32 bits, or with too many continuation bytes, overflows', () => {
    refuses(decoder(), hex('ff ff ff ff ff 0f'), /an index is an integer above 4294967295/, 0);
    refuses(decoder(), hex('ff 80 80 80 80 80 00'), /an index is an integer longer than 32 bits/, 0);
    assert.throws(
      () => decoder().decode(hex('ff 80 80 80 80 00')),
      /index \d+ past/,
      'five continuation bytes are still an integer',
    );
  });

  test('a block that ends inside an integer, a string length or a string is truncated', () => {
    refuses(decoder(), hex('82 ff'), /block ends inside an index/, 2);
    refuses(decoder(), hex('40'), /block ends inside a field name length/, 1);
    refuses(decoder(), hex('40 7f'), /block ends inside a field name length/, 2);
    refuses(decoder(), hex('40 05 6162'), /a field name of 5 octets runs past the end of the block \(2 left\)/, 2);
    refuses(decoder(), hex('41 05 6162'), /a field value of 5 octets runs past the end/, 2);
    refuses(decoder(), hex('41'), /block ends inside a field value length/, 1);
  });

  test('a Huffman string containing EOS is refused (§5.2)', () => {
    // 'a' then EOS (30 one-bits), padded with ones.
    refuses(decoder(), hex('41 85 1f ff ff ff ff'), /Huffman-coded string contains EOS/, 6);
  });

  test('Huffman padding longer than 7 bits, or not all ones, is refused (§5.2)', () => {
    refuses(decoder(), hex('41 82 1f ff'), /padding longer than 7 bits or not all ones/, 3);
    refuses(decoder(), hex('41 81 00'), /padding longer than 7 bits or not all ones/, 2);
    refuses(decoder(), hex('41 81 18'), /padding longer than 7 bits or not all ones/, 2);
    assert.deepEqual(decoder().decode(hex('41 81 1f')), [h(':authority', 'a')], "'a' with 3 bits of padding");
  });

  test('fields RFC 9113 §8.2.1 calls malformed are passed on intact, the table kept in step: the message layer refuses them as a stream error', () => {
    const d = decoder();
    assert.deepEqual(
      d.decode(hex('82 40 01 41 01 76')),
      [h(':method', 'GET'), h('A', 'v')],
      'an uppercase name, inserted into the table',
    );
    assert.deepEqual(
      d.decode(hex('be 82 01 02 61 20')),
      [h('A', 'v'), h(':method', 'GET'), h(':authority', 'a ')],
      'the next block still reaches that entry',
    );
  });

  test('the header list is counted as RFC 9113 §6.5.2 counts it: name + value + 32 per field', () => {
    // ':method: GET' is 7 + 3 + 32 = 42 octets.
    assert.equal(decoder(4096, 84).decode(hex('82 82')).length, 2);
    refuses(decoder(4096, 83), hex('82 82'), /header list grows past SETTINGS_MAX_HEADER_LIST_SIZE 83 \(field 2\)/, 1);
  });

  test('an HPACK bomb (one large dynamic entry referenced many times) is refused when the list passes the limit, not after expanding it', () => {
    const d = decoder(4096, 1 << 16);
    const value = 'x'.repeat(4000);
    d.decode(Buffer.concat([hex('41 7f a1 1e'), Buffer.from(value)]));
    // 4000 + 10 + 32 = 4042 octets per reference; the 17th passes 65536. 100000 references would expand to ~400 MB.
    const bomb = Buffer.alloc(100_000, 0xbe);
    refuses(d, bomb, /header list grows past SETTINGS_MAX_HEADER_LIST_SIZE 65536 \(field 17\)/, 16);
  });

  test('random and mutated blocks either decode or throw H2_ERR_COMPRESSION, never anything else', () => {
    let seed = 0x2545f491;
    const random = (): number => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) / 2 ** 32;
    };
    const valid = hex('8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf');
    for (let i = 0; i < 5000; i++) {
      const block = i % 2 === 0 ? Buffer.from(valid) : Buffer.alloc(1 + Math.floor(random() * 40));
      for (let j = 0; j < (i % 2 === 0 ? 3 : block.length); j++)
        block[Math.floor(random() * block.length)] = Math.floor(random() * 256);
      try {
        decoder(256, 4096).decode(block);
      } catch (e) {
        assert.ok(
          e instanceof H2Error && e.code === H2ErrorCode.COMPRESSION_ERROR,
          `block ${block.toString('hex')} threw ${String(e)}`,
        );
      }
    }
  });
});
