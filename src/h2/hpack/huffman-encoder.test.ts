import { test } from 'node:test';
import assert from 'node:assert/strict';
import { huffmanEncode, huffmanEncodedLength } from './huffman-encoder.js';

const encode = (s: string): string => {
  const out = Buffer.alloc(huffmanEncodedLength(s));
  assert.equal(huffmanEncode(s, out, 0), out.length, `${s}: the encoder writes exactly huffmanEncodedLength octets`);
  return out.toString('hex');
};

test('RFC 7541 C.4 and C.6 strings encode byte for byte, padded with the top bits of EOS', () => {
  assert.equal(encode('www.example.com'), 'f1e3c2e5f23a6ba0ab90f4ff');
  assert.equal(encode('no-cache'), 'a8eb10649cbf');
  assert.equal(encode('custom-key'), '25a849e95ba97d7f');
  assert.equal(encode('302'), '6402');
  assert.equal(encode('private'), 'aec3771a4b');
  assert.equal(encode('Mon, 21 Oct 2013 20:13:21 GMT'), 'd07abe941054d444a8200595040b8166e082a62d1bff');
  assert.equal(encode('https://www.example.com'), '9d29ad171863c78f0b97c8e9ae82ae43d3');
  assert.equal(
    encode('foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1'),
    '94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007',
  );
  assert.equal(encode(''), '');
});

test('writes at the given position and returns the position after the string', () => {
  const out = Buffer.alloc(4, 0xaa);
  assert.equal(huffmanEncode('302', out, 1), 3);
  assert.equal(out.toString('hex'), 'aa6402aa');
});

test('long codes: two 28-bit codes after a 5-bit one (more pending bits than 32-bit arithmetic holds) stay exact', () => {
  // 00011 | 1111111111111111111111100010 | 1111111111111111111111100011 | 111 (padding)
  assert.equal(encode('a\u0002\u0003'), '1ffffff17fffff1f');
});
