import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../errors.js';
import { createKeyAndCsr } from './csr.js';
import { parseCsrPem } from './parse-csr.js';
import { pemEncode } from './pem.js';

const URI = 'spiffe://cluster.local/ns/a/sa/b';

async function csrDer(): Promise<Buffer> {
  const { csrPem } = await createKeyAndCsr(URI);
  return Buffer.from(csrPem.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64');
}

const refused = (der: Buffer, why: RegExp): void => {
  assert.throws(
    () => parseCsrPem(pemEncode('CERTIFICATE REQUEST', der)),
    (e: unknown) => isMeshError(e, 'ISTIOD_ERR_CSR') && why.test(e.message),
  );
};

test('a CSR whose DER has an indefinite or non-minimal length, or an element past its container, is refused with ISTIOD_ERR_CSR', async () => {
  const der = await csrDer();
  // The outer SEQUENCE has a one-byte long-form length (30 81 LL), so certificationRequestInfo starts at 3.
  assert.deepEqual([der[0], der[1], der[3], der[4]], [0x30, 0x81, 0x30, 0x81]);
  const indefinite = Buffer.from(der);
  indefinite[4] = 0x80;
  refused(indefinite, /indefinite length/);
  const nonMinimal = Buffer.concat([Buffer.from([0x30, 0x81, der[2]! + 1, 0x30, 0x82, 0x00]), der.subarray(5)]);
  refused(nonMinimal, /non-minimal length/);
  const overlong = Buffer.from(der);
  overlong[5] = overlong[5]! + 1;
  refused(overlong, /cannot parse the CSR: DER element/);
});

test('a CSR signed with an algorithm the CA does not know is refused, naming it', async () => {
  const der = await csrDer();
  const at = der.indexOf(Buffer.from('06082a8648ce3d040302', 'hex'), 5);
  const unknown = Buffer.from(der);
  unknown[at + 9] = 0x09;
  refused(unknown, /unsupported signature algorithm 1\.2\.840\.10045\.4\.3\.9/);
});

test('a CSR carries its requested URI SANs and its key, and verifies only as signed', async () => {
  const der = await csrDer();
  const csr = parseCsrPem(pemEncode('CERTIFICATE REQUEST', der));
  assert.deepEqual(csr.uriSans, [URI]);
  assert.equal(csr.verify(), true);
  const tampered = Buffer.from(der);
  tampered[tampered.length - 1] = tampered[tampered.length - 1]! ^ 0x01;
  assert.equal(parseCsrPem(pemEncode('CERTIFICATE REQUEST', tampered)).verify(), false);
});

test('a CSR cut short or followed by data is refused, saying which', async () => {
  const der = await csrDer();
  refused(der.subarray(0, der.length - 10), /truncated: its SEQUENCE declares \d+ bytes, the block holds \d+/);
  refused(Buffer.concat([der, Buffer.from([0, 0])]), /followed by 2 bytes of trailing data/);
});

test('a URI SAN that is not ASCII is refused, as Go refuses a malformed IA5String', async () => {
  const der = await csrDer();
  const at = der.indexOf(Buffer.from(URI));
  assert.ok(at > 0);
  const latin = Buffer.from(der);
  latin[at + URI.length - 1] = 0xe9;
  refused(latin, /not ASCII/);
});
