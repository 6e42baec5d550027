import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * An Istio plug-in CA directory made by the openssl CLI the way Istio's tools/certs/common.mk makes one:
 * `utf8 = yes` and `string_mask = utf8only`, so every name is a UTF8String (what cert-manager and Vault produce too).
 * Root and intermediate are P-256; cert-chain.pem is intermediate + root.
 */
export async function opensslPluginCa(dir: string, cluster = 'cluster1'): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const f = (n: string): string => path.join(dir, n);
  const conf = (dn: string, ext: string): string =>
    [
      '[ req ]',
      'prompt = no',
      'utf8 = yes',
      'string_mask = utf8only',
      'distinguished_name = req_dn',
      'x509_extensions = req_ext',
      'req_extensions = req_ext',
      '[ req_ext ]',
      'subjectKeyIdentifier = hash',
      ext,
      'keyUsage = critical, digitalSignature, nonRepudiation, keyEncipherment, keyCertSign',
      '[ req_dn ]',
      dn,
      '',
    ].join('\n');
  await writeFile(f('root-ca.conf'), conf('O = Istio\nCN = Root CA', 'basicConstraints = critical, CA:true'));
  await writeFile(
    f('intermediate.conf'),
    conf(`O = Istio\nCN = Intermediate CA\nL = ${cluster}`, 'basicConstraints = critical, CA:true, pathlen:0'),
  );
  const openssl = (...args: string[]): void =>
    void execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', f('root-key.pem'));
  openssl(
    'req',
    '-new',
    '-x509',
    '-utf8',
    '-key',
    f('root-key.pem'),
    '-config',
    f('root-ca.conf'),
    '-days',
    '3650',
    '-sha256',
    '-out',
    f('root-cert.pem'),
  );
  openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', f('ca-key.pem'));
  openssl('req', '-new', '-utf8', '-key', f('ca-key.pem'), '-config', f('intermediate.conf'), '-out', f('ca.csr'));
  openssl(
    'x509',
    '-req',
    '-in',
    f('ca.csr'),
    '-CA',
    f('root-cert.pem'),
    '-CAkey',
    f('root-key.pem'),
    '-CAcreateserial',
    '-days',
    '730',
    '-sha256',
    '-extensions',
    'req_ext',
    '-extfile',
    f('intermediate.conf'),
    '-out',
    f('ca-cert.pem'),
  );
  await writeFile(
    f('cert-chain.pem'),
    (await readFile(f('ca-cert.pem'), 'utf8')) + (await readFile(f('root-cert.pem'), 'utf8')),
  );
}

/** A self-signed P-256 server certificate for `subjectAltName` (e.g. `IP:127.0.0.1`), by the openssl CLI, valid a day. */
export function opensslSelfSigned(certFile: string, keyFile: string, subjectAltName: string): void {
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1'],
      ...['-subj', '/CN=amesh test server', '-addext', `subjectAltName=${subjectAltName}`],
      ...['-keyout', keyFile, '-out', certFile],
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
}
