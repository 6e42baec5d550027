import { X509Certificate } from 'node:crypto';
import { MeshError } from '../../lib/errors.js';
import { splitPemCertificates } from '../../lib/pki/pem.js';
import { identityToString, uriSans, type Identity } from '../../lib/spiffe.js';

/**
 * A workload's key and certificate chain, built from a CreateCertificate-shaped chain (ztunnel `src/identity/caclient.rs`): `[0]` the leaf,
 * `[1..n-1]` intermediates, the last element the root bundle (the HBONE trust anchors).
 */
export interface WorkloadCertificate {
  readonly identity: Identity;
  /** PKCS#8 PEM. Never logged or dumped. */
  readonly keyPem: string;
  readonly leafPem: string;
  readonly intermediatesPem: readonly string[];
  readonly rootsPem: readonly string[];
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly leaf: X509Certificate;
}

export function workloadCertificateFromChain(
  identity: Identity,
  keyPem: string,
  chain: readonly string[],
): WorkloadCertificate {
  if (chain.length < 2)
    throw new MeshError(
      'ZT_ERR_CERT_UNAVAILABLE',
      `CA returned a chain of ${chain.length} element(s); expected leaf, intermediates and the root bundle`,
    );
  const leafPem = chain[0]!;
  const leaf = new X509Certificate(leafPem);
  const want = identityToString(identity);
  if (!uriSans(leaf.subjectAltName).includes(want)) {
    throw new MeshError(
      'ZT_ERR_CERT_UNAVAILABLE',
      `CA issued a certificate for ${leaf.subjectAltName ?? 'no SAN'}, not ${want}`,
    );
  }
  const rootsPem = splitPemCertificates(chain[chain.length - 1]!);
  if (rootsPem.length === 0)
    throw new MeshError('ZT_ERR_CERT_UNAVAILABLE', 'CA response has no root certificate in its last element');
  return Object.freeze({
    identity,
    keyPem,
    leafPem,
    intermediatesPem: chain.slice(1, -1).flatMap(splitPemCertificates),
    rootsPem,
    notBefore: new Date(leaf.validFrom),
    notAfter: new Date(leaf.validTo),
    leaf,
  });
}

/**
 * When to refresh: at 50% of the lifetime, as ztunnel `src/tls/certificate.rs` `refresh_at` does. Istio's CA backdates
 * notBefore by 2 minutes, so a lifetime under about 4 minutes (a short SECRET_TTL) would be past its half-life on
 * arrival and refresh in a tight loop; such a certificate is refreshed halfway through what is left of it instead.
 */
export function refreshAt(c: WorkloadCertificate, receivedAt: number): number {
  const nb = c.notBefore.getTime();
  const na = c.notAfter.getTime();
  const halfLife = nb + (na - nb) / 2;
  return halfLife > receivedAt ? halfLife : receivedAt + (na - receivedAt) / 2;
}
