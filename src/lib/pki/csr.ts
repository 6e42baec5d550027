import { x509, subtle, EC_P256 } from './x509.js';

export interface KeyAndCsr {
  /** PKCS#8 PEM private key. Never logged. */
  readonly keyPem: string;
  readonly csrPem: string;
}

/**
 * A fresh ECDSA P-256 key and a CSR for `uri` with an empty subject and one critical URI SAN, as ztunnel
 * builds them (ztunnel `src/tls/csr.rs`).
 */
export async function createKeyAndCsr(uri: string): Promise<KeyAndCsr> {
  const keys = await subtle.generateKey(EC_P256, true, ['sign', 'verify']);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    keys,
    signingAlgorithm: EC_P256,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'url', value: uri }], true)],
  });
  const pkcs8 = await subtle.exportKey('pkcs8', keys.privateKey);
  const keyPem = x509.PemConverter.encode(pkcs8, 'PRIVATE KEY');
  return { keyPem, csrPem: csr.toString('pem') };
}
