/**
 * Whether a gateway listener that verifies clients (Istio's MUTUAL and OPTIONAL_MUTUAL, Gateway API frontend
 * validation) lets a TLS client in, as Envoy's certificate validation decides for the listeners Istio generates:
 * - a certificate must chain to the listener's CA (Node checked it in the handshake); OPTIONAL_MUTUAL lets a client
 *   without one in, never one whose certificate does not verify;
 * - with `subjectAltNames`, it must carry one of them as a DNS, URI, email or IP subject alternative name, compared
 *   exactly (Envoy `match_subject_alt_names` with the exact matchers Istio makes of them);
 * - with `verifyCertificateHash` or `verifyCertificateSpki`, its SHA-256 fingerprint or its SubjectPublicKeyInfo's
 *   SHA-256 must be one listed; matching either list is enough (Envoy `verify_certificate_hash`/`_spki`).
 */
import { createHash, X509Certificate } from 'node:crypto';
import type tls from 'node:tls';
import { canonicalIp } from '../lib/ip.js';
import type { GatewayListenerConfig } from './gateway-listeners-config.js';

/** The SAN kinds Envoy compares a `match_subject_alt_names` entry with, as Node names them in `subjectaltname`. */
const SAN_KINDS: ReadonlySet<string> = new Set(['DNS', 'URI', 'email', 'IP Address']);

/**
 * The values of Node's `subjectaltname` text (`DNS:a, URI:spiffe://b, IP Address:10.0.0.1`), of the kinds Envoy
 * compares; Node writes a value with a comma or quote as a JSON string.
 */
export function subjectAltNameValues(text: string | undefined): string[] {
  const out: string[] = [];
  for (const m of (text ?? '').matchAll(/([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/g)) {
    if (!SAN_KINDS.has(m[1]!)) continue;
    const v = m[2]!.startsWith('"') ? (JSON.parse(m[2]!) as string) : m[2]!;
    // Node writes an IPv6 name in full and upper case; compared in its canonical form.
    out.push(m[1] === 'IP Address' ? (canonicalIp(v) ?? v) : v);
  }
  return out;
}

/** Why the client of `socket` may not use listener `l`; undefined when it may. */
export function clientCertificateRefusal(socket: tls.TLSSocket, l: GatewayListenerConfig): string | undefined {
  if (l.clientCaNames.length === 0) return undefined;
  const cert = socket.getPeerCertificate();
  if (Object.keys(cert).length === 0) return l.clientCertificateOptional ? undefined : 'no client certificate';
  if (!socket.authorized) return `the client certificate does not verify: ${String(socket.authorizationError)}`;
  if (l.clientSubjectAltNames.length > 0) {
    const sans = subjectAltNameValues(cert.subjectaltname);
    if (!l.clientSubjectAltNames.some((n) => sans.includes(n) || sans.includes(canonicalIp(n) ?? n)))
      return `the client certificate carries none of the subject alternative names ${l.clientSubjectAltNames.join(', ')}`;
  }
  if (l.clientCertificateHashes.length > 0 || l.clientCertificateSpkis.length > 0) {
    const hash = cert.fingerprint256.replaceAll(':', '').toLowerCase();
    const spki = createHash('sha256')
      .update(new X509Certificate(cert.raw).publicKey.export({ type: 'spki', format: 'der' }))
      .digest('base64');
    if (!l.clientCertificateHashes.includes(hash) && !l.clientCertificateSpkis.includes(spki))
      return 'the client certificate matches none of the certificate hashes and SPKI hashes of the listener';
  }
  return undefined;
}
