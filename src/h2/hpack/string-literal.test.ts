import { test } from 'node:test';
import assert from 'node:assert/strict';
import { H2ErrorCode } from '../frame.js';
import { H2Error } from '../h2-error.js';
import { BlockCursor } from './block-cursor.js';
import { decodeStringLiteral, encodeStringLiteral, maxStringLiteralBytes } from './string-literal.js';

const encode = (s: string): string => {
  const out = Buffer.alloc(maxStringLiteralBytes(s));
  return out.subarray(0, encodeStringLiteral(out, 0, s)).toString('hex');
};
const decode = (hex: string): string => decodeStringLiteral(new BlockCursor(Buffer.from(hex, 'hex')), 'a test string');

test('raw and Huffman-coded literals decode (RFC 7541 C.3.1 and C.4.1 authority)', () => {
  assert.equal(decode('0f7777772e6578616d706c652e636f6d'), 'www.example.com');
  assert.equal(decode('8cf1e3c2e5f23a6ba0ab90f4ff'), 'www.example.com');
  assert.equal(decode('00'), '');
});

test('the encoder Huffman-codes a string only when that is shorter', () => {
  assert.equal(encode('www.example.com'), '8cf1e3c2e5f23a6ba0ab90f4ff');
  assert.equal(encode('{}'), '027b7d', "'{' and '}' take 15 bits each: raw is shorter");
  assert.equal(encode(''), '00');
});

test('latin1: octets above 0x7f pass through both ways, and a long raw string gets a multi-byte length', () => {
  const s = '\u00e9\u00ff'.repeat(100);
  assert.equal(decode(encode(s)), s);
  assert.ok(
    encode(s).startsWith('7f49e9ff'),
    'raw (these octets have codes longer than 8 bits), length 200 = 127 + 73',
  );
});

test('a length past the end of the block is refused before reading anything', () => {
  assert.throws(
    () => decode('0a6162'),
    (e: unknown) =>
      e instanceof H2Error &&
      e.code === H2ErrorCode.COMPRESSION_ERROR &&
      /a test string of 10 octets runs past the end of the block \(2 left\) at byte 1/.test(e.message),
  );
});
