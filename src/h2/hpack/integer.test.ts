import { test } from 'node:test';
import assert from 'node:assert/strict';
import { H2ErrorCode } from '../frame.js';
import { H2Error } from '../h2-error.js';
import { BlockCursor } from './block-cursor.js';
import { decodeInteger, encodeInteger, HPACK_MAX_INTEGER } from './integer.js';

function decode(bytes: number[], prefixBits: number): number {
  const c = new BlockCursor(Uint8Array.from(bytes));
  return decodeInteger(c, c.next('a test integer'), prefixBits, 'a test integer');
}

function encode(value: number, prefixBits: number, flags = 0): number[] {
  const out = Buffer.alloc(8);
  return [...out.subarray(0, encodeInteger(out, 0, value, prefixBits, flags))];
}

test('RFC 7541 C.1: 10 and 1337 with a 5-bit prefix, 42 at an octet boundary', () => {
  assert.deepEqual(encode(10, 5), [0x0a]);
  assert.deepEqual(encode(1337, 5), [0x1f, 0x9a, 0x0a]);
  assert.deepEqual(encode(42, 8), [0x2a]);
  assert.equal(decode([0x0a], 5), 10);
  assert.equal(decode([0x1f, 0x9a, 0x0a], 5), 1337);
  assert.equal(decode([0x2a], 8), 42);
});

test('the bits above the prefix are flags, not part of the value', () => {
  assert.deepEqual(encode(5, 5, 0x20), [0x25]);
  assert.equal(decode([0xe5], 5), 5);
  assert.deepEqual(encode(31, 5, 0x20), [0x3f, 0x00], 'a value equal to the prefix mask needs a continuation byte');
  assert.equal(decode([0x3f, 0x00], 5), 31);
});

test('round trip at every prefix width up to the largest accepted integer', () => {
  for (const prefix of [4, 5, 6, 7, 8]) {
    for (const v of [0, 1, 14, 15, 16, 126, 127, 128, 255, 256, 16_383, 16_384, 2 ** 21, 2 ** 28, HPACK_MAX_INTEGER]) {
      assert.equal(decode(encode(v, prefix), prefix), v, `${v} with a ${prefix}-bit prefix`);
    }
  }
});

test('2^32 overflows; a sixth continuation byte overflows even when it adds nothing', () => {
  const overflow = (e: unknown): boolean =>
    e instanceof H2Error &&
    e.code === H2ErrorCode.COMPRESSION_ERROR &&
    /integer above 4294967295 at byte 0/.test(e.message);
  assert.throws(
    () =>
      decode(
        encode(HPACK_MAX_INTEGER, 5).map((b, i, a) => (i === a.length - 1 ? b + 1 : b)),
        5,
      ),
    overflow,
  );
  assert.throws(() => decode([0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], 5), /integer longer than 32 bits at byte 0/);
  assert.equal(decode([0x1f, 0x80, 0x80, 0x80, 0x80, 0x00], 5), 31);
});

test('a block ending inside the continuation bytes is truncated, with the offset where it ends', () => {
  assert.throws(
    () => decode([0x1f, 0x9a], 5),
    (e: unknown) =>
      e instanceof H2Error &&
      e.code === H2ErrorCode.COMPRESSION_ERROR &&
      /block ends inside a test integer at byte 2/.test(e.message),
  );
});
