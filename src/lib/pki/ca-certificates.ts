/**
 * Building blocks for the certificates amesh signs: serials, validity backdating, self-signed roots and
 * intermediates, and the issuer name copied byte for byte from the signing certificate.
 *
 * Issuer bytes: webpki (ztunnel) and Go's crypto/x509 match a certificate to its issuer by comparing the raw DER
 * of the issuer and subject names. @peculiar/x509 re-encodes a name given as a string (PrintableString), which
 * breaks that match for CAs whose names are UTF8String (Istio's tools/certs/common.mk, cert-manager, Vault,
 * openssl). So the issuer is always a `Name` built from the signing certificate's subject DER, which the library
 * re-serialises keeping each attribute's string type; `exactSubjectName` checks that those bytes occur verbatim in
 * the certificate and refuses the CA otherwise.
 */
import { KeyObject } from 'node:crypto';
import { MeshError } from '../errors.js';
import { CLOCK_SKEW_GRACE_MS, randomSerial, SELF_SIGNED_ROOT_TTL_MS } from './issue-policy.js';
import { x509, subtle, EC_P256 } from './x509.js';

export { CLOCK_SKEW_GRACE_MS, randomSerial, SELF_SIGNED_ROOT_TTL_MS };

/**
 * The subject of `cert` as a `Name` whose DER is exactly the certificate's subject bytes, for use as the issuer of
 * what it signs. Throws ZT_ERR_CA_FILES (naming `file`) when the library cannot reproduce the bytes.
 */
export function exactSubjectName(cert: x509.X509Certificate, file: string): x509.Name {
  const der = Buffer.from(cert.subjectName.toArrayBuffer());
  if (!Buffer.from(cert.rawData).includes(der)) {
    throw new MeshError(
      'ZT_ERR_CA_FILES',
      `${file}: the subject name "${cert.subject}" uses an encoding that cannot be copied byte for byte into issued certificates; reissue the CA certificate with DER-encoded names (openssl does)`,
    );
  }
  return new x509.Name(der);
}

const caKeyUsages = (): x509.KeyUsagesExtension =>
  new x509.KeyUsagesExtension(
    x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
    true,
  );

/** A new self-signed ECDSA P-256 root named `name`, valid for `ttlMs` (Istio's default: 10 years). */
export async function createSelfSignedRoot(
  name: string,
  ttlMs = SELF_SIGNED_ROOT_TTL_MS,
): Promise<{ cert: x509.X509Certificate; keys: CryptoKeyPair }> {
  const keys = await subtle.generateKey(EC_P256, true, ['sign', 'verify']);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name,
    notBefore: new Date(now - CLOCK_SKEW_GRACE_MS),
    notAfter: new Date(now + ttlMs),
    keys,
    signingAlgorithm: EC_P256,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      caKeyUsages(),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, keys };
}

/** A new self-signed root as `createSelfSignedRoot` makes it, as PEM: the certificate and its PKCS#8 key. */
export async function createSelfSignedRootPem(
  name: string,
  ttlMs: number,
): Promise<{ readonly certPem: string; readonly keyPem: string }> {
  const { cert, keys } = await createSelfSignedRoot(name, ttlMs);
  return {
    certPem: cert.toString('pem') + '\n',
    keyPem: KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}

/** A new P-256 intermediate CA (path length 0) named `subject`, signed by `root`. */
export async function createIntermediate(
  root: { cert: x509.X509Certificate; keys: CryptoKeyPair },
  subject: string,
  ttlMs: number,
): Promise<{ cert: x509.X509Certificate; keys: CryptoKeyPair }> {
  const keys = await subtle.generateKey(EC_P256, true, ['sign', 'verify']);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject,
    issuer: exactSubjectName(root.cert, 'root certificate'),
    notBefore: new Date(now - CLOCK_SKEW_GRACE_MS),
    notAfter: new Date(Math.min(now + ttlMs, root.cert.notAfter.getTime())),
    publicKey: keys.publicKey,
    signingKey: root.keys.privateKey,
    signingAlgorithm: EC_P256,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      caKeyUsages(),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(root.cert, false),
    ],
  });
  return { cert, keys };
}
