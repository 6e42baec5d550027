import tls from 'node:tls';
import { constants as cryptoConstants } from 'node:crypto';
import type { PeerCertificate } from 'node:tls';
import { MeshError } from '../../lib/errors.js';
import { identityFromSans, uriSans, type Identity } from '../../lib/spiffe.js';
import type { WorkloadCertificate } from '../identity/workload-certificate.js';

/** HBONE TLS (ztunnel `src/tls/workload.rs`): TLS 1.3 only, the two AES-GCM suites, ALPN h2. No ChaCha20. */
export const HBONE_TLS = Object.freeze({
  minVersion: 'TLSv1.3' as const,
  maxVersion: 'TLSv1.3' as const,
  ciphers: 'TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256',
  ecdhCurve: 'X25519:P-256:P-384',
  ALPNProtocols: ['h2'],
});

/** Key and chain served by a workload (leaf + intermediates, never the root), plus its trust anchors. */
export function certOptions(c: WorkloadCertificate): Pick<tls.SecureContextOptions, 'key' | 'cert' | 'ca'> {
  return { key: c.keyPem, cert: c.leafPem + c.intermediatesPem.join(''), ca: c.rootsPem.join('') };
}

/** Server side without its certificate: the client certificate is mandatory and must chain to our roots; resumption is off. */
export const SERVER_TLS = Object.freeze({
  ...HBONE_TLS,
  requestCert: true,
  rejectUnauthorized: true,
  secureOptions: cryptoConstants.SSL_OP_NO_TICKET,
});

/** Server side with the workload's certificate. */
export function serverTlsOptions(c: WorkloadCertificate): tls.TlsOptions {
  return { ...SERVER_TLS, ...certOptions(c) };
}

/**
 * Client side: no SNI (we dial an IP), chain verified against our roots, then the server's SPIFFE SAN must be
 * one of `expected` (ztunnel `src/tls/workload.rs`). No hostname check.
 */
export function clientTlsOptions(c: WorkloadCertificate, expected: readonly string[]): tls.ConnectionOptions {
  return {
    ...HBONE_TLS,
    ...certOptions(c),
    rejectUnauthorized: true,
    checkServerIdentity: (_host: string, cert: PeerCertificate) => verifyServerSan(cert.subjectaltname, expected),
  };
}

export function verifyServerSan(subjectAltName: string | undefined, expected: readonly string[]): Error | undefined {
  const sans = uriSans(subjectAltName);
  if (sans.some((s) => expected.includes(s))) return undefined;
  return new MeshError(
    'ZT_ERR_IDENTITY_MISMATCH',
    `server identity ${sans.join(', ') || '(none)'} is not one of the expected ${expected.join(', ')}; the destination may be impersonated or misconfigured`,
  );
}

/**
 * After the handshake, the server checks that the client's identity is in its own trust domain
 * (ztunnel `TrustDomainVerifier`). Returns the peer identity or an error.
 */
export function verifyClientIdentity(socket: tls.TLSSocket, serverTrustDomain: string): Identity | MeshError {
  const cert = socket.getPeerCertificate();
  if (cert === null || Object.keys(cert).length === 0)
    return new MeshError('ZT_ERR_NO_CLIENT_CERT', 'client presented no certificate');
  const id = identityFromSans(cert.subjectaltname);
  if (id === undefined)
    return new MeshError(
      'ZT_ERR_TRUST_DOMAIN_MISMATCH',
      `client certificate has no SPIFFE identity (SANs: ${cert.subjectaltname ?? 'none'})`,
    );
  if (id.trustDomain !== serverTrustDomain) {
    return new MeshError(
      'ZT_ERR_TRUST_DOMAIN_MISMATCH',
      `client trust domain "${id.trustDomain}" is not ours ("${serverTrustDomain}")`,
    );
  }
  return id;
}
