/**
 * The certificate and key a TLS Secret holds, read as Istio reads gateway credentials (istio
 * `pilot/pkg/credentials/kube/secrets.go` `ExtractCertInfo`): the generic `cert`/`key` pair first, else the
 * `kubernetes.io/tls` `tls.crt`/`tls.key` pair; and whether they make a usable key pair (Go's `tls.X509KeyPair`).
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';

export interface CertInfo {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/** A Secret's `data` (base64 values) → its certificate and key, or why there are none. */
export function extractCertInfo(data: Readonly<Record<string, string>> | undefined): CertInfo | string {
  const d = data ?? {};
  const value = (k: string): Buffer => Buffer.from(d[k] ?? '', 'base64');
  for (const [cert, key] of [
    ['cert', 'key'],
    ['tls.crt', 'tls.key'],
  ] as const) {
    const c = value(cert);
    const k = value(key);
    if (c.length > 0 && k.length > 0) return { cert: c, key: k };
  }
  for (const [cert, key] of [
    ['cert', 'key'],
    ['tls.crt', 'tls.key'],
  ] as const)
    if (cert in d && key in d) return `found keys "${cert}" and "${key}", but they were empty`;
  const found = Object.keys(d).sort().join(', ');
  return `found secret, but didn't have expected keys (cert and key) or (tls.crt and tls.key); found: ${found}`;
}

/**
 * A Secret's CA certificate for verifying clients, read as Istio reads it (istio `pilot/pkg/credentials/kube/secrets.go`
 * `ExtractRoot`): the generic `cacert` first, else the `kubernetes.io/tls` `ca.crt`; or why there is none.
 */
export function extractRoot(data: Readonly<Record<string, string>> | undefined): Buffer | string {
  const d = data ?? {};
  for (const k of ['cacert', 'ca.crt']) {
    const v = Buffer.from(d[k] ?? '', 'base64');
    if (v.length > 0) return v;
  }
  for (const k of ['cacert', 'ca.crt']) if (k in d) return `found key "${k}", but it was empty`;
  const found = Object.keys(d).sort().join(', ');
  return `found secret, but didn't have expected keys cacert or ca.crt; found: ${found}`;
}

/** Why `info` is not a usable key pair (unparsable PEM, or a key that is not the certificate's); undefined if it is. */
export function keyPairProblem(info: CertInfo): string | undefined {
  try {
    const cert = new X509Certificate(info.cert);
    const key = createPrivateKey(info.key);
    return cert.checkPrivateKey(key) ? undefined : 'private key does not match public key';
  } catch (e) {
    return (e as Error).message;
  }
}
