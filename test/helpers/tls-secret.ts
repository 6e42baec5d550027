import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A self-signed P-256 certificate for `subjectAltNames` (`DNS:name`, `IP:address`) made by the openssl CLI, written
 * as `<prefix>.pem` and `<prefix>.key` in `dir`. It is its own CA: a client trusts it with `--cacert`.
 */
export function selfSignedCertificate(
  dir: string,
  prefix: string,
  subjectAltNames: readonly string[],
): { readonly cert: string; readonly key: string } {
  const key = path.join(dir, `${prefix}.key`);
  const cert = path.join(dir, `${prefix}.pem`);
  const cn = (subjectAltNames[0] ?? prefix).replace(/^(DNS|IP):/, '');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${cn}`,
      '-addext',
      `subjectAltName=${subjectAltNames.join(',')}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return { cert, key };
}

/**
 * A `kubernetes.io/tls` Secret holding a self-signed certificate for `dnsNames`, as `kubectl create secret tls`
 * writes one, as a YAML document; and the certificate, for a client to trust.
 */
export async function tlsSecret(
  namespace: string,
  name: string,
  dnsNames: readonly string[],
): Promise<{ readonly yaml: string; readonly certPem: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-tls-'));
  try {
    const files = selfSignedCertificate(
      dir,
      'tls',
      dnsNames.map((d) => `DNS:${d}`),
    );
    const certPem = await readFile(files.cert, 'utf8');
    const keyPem = await readFile(files.key, 'utf8');
    const b64 = (s: string): string => Buffer.from(s).toString('base64');
    const yaml = `---
apiVersion: v1
kind: Secret
metadata: {name: ${name}, namespace: ${namespace}}
type: kubernetes.io/tls
data: {tls.crt: ${b64(certPem)}, tls.key: ${b64(keyPem)}}
`;
    return { yaml, certPem };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
