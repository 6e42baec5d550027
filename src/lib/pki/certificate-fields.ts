/**
 * The parts of a CA certificate the CA copies into what it signs: its subject, byte for byte, as the issuer (webpki
 * and Go's crypto/x509 match an issuer by raw DER), and its key identifier. Read with der-reader.ts.
 */
import { createHash, type X509Certificate } from 'node:crypto';
import { children, content, expectTag, readTlv, TAG, whole } from './der-reader.js';

const VERSION_TAG = 0xa0;

/** The DER of `cert`'s subject Name (RFC 5280 §4.1: TBSCertificate's sixth field, fifth without a version). */
export function subjectDer(cert: X509Certificate): Buffer {
  const der = cert.raw;
  const [tbs] = children(der, expectTag(readTlv(der, 0), TAG.sequence, 'certificate'));
  const fields = children(der, expectTag(tbs, TAG.sequence, 'tbsCertificate'));
  const subject = fields[fields[0]?.tag === VERSION_TAG ? 5 : 4];
  return Buffer.from(whole(der, expectTag(subject, TAG.sequence, 'subject')));
}

/** RFC 5280 §4.2.1.2 method (1): the SHA-1 of the subjectPublicKey BIT STRING's bits, as openssl and Go compute it. */
export function keyIdentifier(cert: X509Certificate): Buffer {
  const spki = cert.publicKey.export({ type: 'spki', format: 'der' });
  const [, bits] = children(spki, expectTag(readTlv(spki, 0), TAG.sequence, 'subjectPublicKeyInfo'));
  return createHash('sha1')
    .update(content(spki, expectTag(bits, TAG.bitString, 'subjectPublicKey')).subarray(1))
    .digest();
}
