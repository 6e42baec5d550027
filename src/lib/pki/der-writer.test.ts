import { test } from 'node:test';
import assert from 'node:assert/strict';
import { objectIdentifier, sequence, smallInteger, tlv } from './der-writer.js';

test('DER lengths take the short form below 128 bytes and the minimal long form above (X.690 §8.1.3)', () => {
  assert.deepEqual(tlv(0x04, Buffer.alloc(127)).subarray(0, 2), Buffer.from([0x04, 0x7f]));
  assert.deepEqual(tlv(0x04, Buffer.alloc(128)).subarray(0, 3), Buffer.from([0x04, 0x81, 0x80]));
  assert.deepEqual(tlv(0x04, Buffer.alloc(256)).subarray(0, 4), Buffer.from([0x04, 0x82, 0x01, 0x00]));
  assert.deepEqual(sequence(), Buffer.from([0x30, 0x00]));
});

test("DER integers are minimal two's complement: a leading zero only before a set high bit (X.690 §8.3.2)", () => {
  assert.deepEqual(smallInteger(0), Buffer.from([0x02, 0x01, 0x00]));
  assert.deepEqual(smallInteger(127), Buffer.from([0x02, 0x01, 0x7f]));
  assert.deepEqual(smallInteger(128), Buffer.from([0x02, 0x02, 0x00, 0x80]));
  assert.deepEqual(smallInteger(256), Buffer.from([0x02, 0x02, 0x01, 0x00]));
});

test('DER object identifiers pack the first two arcs and write the rest base 128 (X.690 §8.19)', () => {
  // extensionRequest and ecdsa-with-SHA256, as OpenSSL encodes them.
  assert.equal(objectIdentifier('1.2.840.113549.1.9.14').toString('hex'), '06092a864886f70d01090e');
  assert.equal(objectIdentifier('1.2.840.10045.4.3.2').toString('hex'), '06082a8648ce3d040302');
  assert.equal(objectIdentifier('2.5.29.17').toString('hex'), '0603551d11');
});
