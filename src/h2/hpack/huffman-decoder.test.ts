import { test } from 'node:test';
import assert from 'node:assert/strict';
import { H2ErrorCode } from '../frame.js';
import { H2Error } from '../h2-error.js';
import { huffmanDecode } from './huffman-decoder.js';
import { huffmanEncode, huffmanEncodedLength } from './huffman-encoder.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const decode = (s: string): string => {
  const b = hex(s);
  return huffmanDecode(b, 0, b.length);
};
const invalid =
  (what: RegExp, offset: number) =>
  (e: unknown): boolean =>
    e instanceof H2Error &&
    e.code === H2ErrorCode.COMPRESSION_ERROR &&
    what.test(e.message) &&
    e.message.endsWith(`at byte ${offset} of the header block`);

test('RFC 7541 C.4 and C.6 Huffman strings decode', () => {
  assert.equal(decode('f1e3 c2e5 f23a 6ba0 ab90 f4ff'), 'www.example.com');
  assert.equal(decode('a8eb 1064 9cbf'), 'no-cache');
  assert.equal(decode('25a8 49e9 5bb8 e8b4 bf'), 'custom-value');
  assert.equal(decode('d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff'), 'Mon, 21 Oct 2013 20:13:21 GMT');
  assert.equal(
    decode(
      '94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07',
    ),
    'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1',
  );
  assert.equal(decode(''), '', 'an empty string is valid');
});

test('every octet, including the 30-bit codes, survives encode then decode', () => {
  const all = String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i));
  for (const s of [all, all.split('').reverse().join(''), '\u00ff'.repeat(33), '\u0000'.repeat(7)]) {
    const out = Buffer.alloc(huffmanEncodedLength(s));
    assert.equal(huffmanEncode(s, out, 0), out.length);
    assert.equal(huffmanDecode(out, 0, out.length), s);
  }
});

test('decodes only the given range of a larger buffer', () => {
  const b = hex('ff ff 6402 ff');
  assert.equal(huffmanDecode(b, 2, 4), '302');
});

test('EOS inside a string is a decoding error (§5.2), reported at the byte that completes it', () => {
  assert.throws(() => decode('ff ff ff ff fc'), invalid(/contains EOS/, 3));
  assert.throws(() => decode('1f ff ff ff ff'), invalid(/contains EOS/, 4), "'a' then EOS");
});

test('padding longer than 7 bits is a decoding error (§5.2)', () => {
  assert.throws(() => decode('ff'), invalid(/padding longer than 7 bits or not all ones/, 0));
  assert.throws(() => decode('1f ff'), invalid(/padding/, 1), "'a' then a whole byte of ones");
  assert.throws(() => decode('1f ff ff ff'), invalid(/padding/, 3));
});

test('padding that is not all ones is a decoding error (§5.2)', () => {
  assert.throws(() => decode('00'), invalid(/padding/, 0), "'0' then three zero bits");
  assert.throws(() => decode('1e'), invalid(/padding/, 0), "'a' then 110");
});
