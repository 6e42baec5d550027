/**
 * Istio's plug-in CA directory (the `cacerts` secret, mounted at /etc/cacerts): which files it holds, reading them
 * with the checks Istio makes before it signs anything (signing-ca.ts), and writing a new one like
 * `make -f tools/certs/Makefile.selfsigned.mk <cluster>-cacerts`, never over existing CA material.
 *
 * Two layouts, as istiod detects them (istio `pilot/pkg/bootstrap/istio_ca.go` detectSigningCABundleAndCRL): when
 * `tls.crt` is there, a kubernetes.io/tls Secret's (tls.crt, tls.key, ca.crt; the chain is tls.crt then ca.crt),
 * else Istio's own (ca-cert.pem, ca-key.pem, root-cert.pem, cert-chain.pem). The CRL file is not read.
 */
import { access, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { KeyObject } from 'node:crypto';
import path from 'node:path';
import { MeshError } from '../errors.js';
import { SELF_SIGNED_ROOT_TTL_MS } from './issue-policy.js';
import { PRIVATE_DIR_MODE, writeNewPrivateFile } from './private-files.js';
import { verifySigningCa, type SigningCa, type SigningCaPart } from './signing-ca.js';

/** Istio's plug-in CA file names (`cacerts` secret). */
export const PLUGIN_CA_FILES = {
  caCert: 'ca-cert.pem',
  caKey: 'ca-key.pem',
  rootCert: 'root-cert.pem',
  certChain: 'cert-chain.pem',
} as const;

/** The same CA in a kubernetes.io/tls Secret (istio `security/pkg/pki/ca/ca.go` TLSSecret*File). */
export const TLS_SECRET_CA_FILES = { caCert: 'tls.crt', caKey: 'tls.key', rootCert: 'ca.crt' } as const;

/** The files of a plug-in CA directory, in the layout its contents call for. */
export interface PluginCaLayout {
  readonly form: 'istio' | 'tls';
  /** Each part's file name; in the tls form the chain is tls.crt followed by ca.crt. */
  readonly names: Readonly<Record<SigningCaPart, string>>;
  /** The layout's files that exist, and those that do not. */
  readonly present: readonly string[];
  readonly missing: readonly string[];
}

const TLS_NAMES = { ...TLS_SECRET_CA_FILES, certChain: TLS_SECRET_CA_FILES.caCert };

/**
 * Which layout `dir` uses and which of its files exist; a directory that does not exist holds none. Errors other
 * than "no such file" (a permission, `dir` not a directory) are ZT_ERR_CA_FILES, as istiod refuses them too.
 */
export async function inspectPluginCaDir(dir: string): Promise<PluginCaLayout> {
  const exists = async (f: string): Promise<boolean> => {
    try {
      await stat(path.join(dir, f));
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw new MeshError('ZT_ERR_CA_FILES', `cannot look for ${path.join(dir, f)}: ${(e as Error).message}`);
    }
  };
  const form = (await exists(TLS_SECRET_CA_FILES.caCert)) ? 'tls' : 'istio';
  const names = form === 'tls' ? TLS_NAMES : PLUGIN_CA_FILES;
  const files = [...new Set(Object.values(names))];
  const found = await Promise.all(files.map(exists));
  return {
    form,
    names,
    present: files.filter((_, i) => found[i]),
    missing: files.filter((_, i) => !found[i]),
  };
}

/** Reads and verifies `dir`. Every error is ZT_ERR_CA_FILES and names the file and what to do. */
export async function readPluginCaDir(dir: string, now = Date.now()): Promise<SigningCa> {
  const layout = await inspectPluginCaDir(dir);
  const read = async (f: string): Promise<string> => {
    try {
      return await readFile(path.join(dir, f), 'utf8');
    } catch (e) {
      throw new MeshError(
        'ZT_ERR_CA_FILES',
        `${path.join(dir, f)}: cannot read it (${(e as Error).message}); a plug-in CA directory needs ${[...new Set(Object.values(layout.names))].join(', ')}`,
      );
    }
  };
  const { names } = layout;
  const [caCert, caKey, rootCert, chain] = await Promise.all([
    read(names.caCert),
    read(names.caKey),
    read(names.rootCert),
    layout.form === 'tls' ? Promise.resolve('') : read(names.certChain),
  ]);
  return verifySigningCa(
    { caCert, caKey, rootCert, certChain: layout.form === 'tls' ? caCert + rootCert : chain },
    { code: 'ZT_ERR_CA_FILES', names, locate: (f) => path.join(dir, f) },
    now,
  );
}

/**
 * Writes a new plug-in CA directory (root + intermediate). Refuses, with AMESH_ERR_CA_EXISTS, a directory that
 * already holds any plug-in CA file: CA material is never overwritten. The key is written 0600.
 */
export async function writePluginCaDir(dir: string, trustDomain = 'cluster.local'): Promise<void> {
  const exists = (f: string): Promise<boolean> =>
    access(path.join(dir, f)).then(
      () => true,
      () => false,
    );
  const present = (
    await Promise.all(Object.values(PLUGIN_CA_FILES).map(async (f) => ((await exists(f)) ? f : undefined)))
  ).filter((f) => f !== undefined);
  if (present.length > 0) {
    throw new MeshError(
      'AMESH_ERR_CA_EXISTS',
      `${dir} already holds CA material (${present.join(', ')}); amesh never overwrites it: choose an empty directory, or move these files away yourself`,
    );
  }
  const { createSelfSignedRoot, createIntermediate } = await import('./ca-certificates.js');
  const root = await createSelfSignedRoot('O=Istio, CN=Root CA');
  const inter = await createIntermediate(
    root,
    `O=Istio, CN=Intermediate CA, L=${trustDomain}`,
    SELF_SIGNED_ROOT_TTL_MS / 2,
  );
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const rootPem = root.cert.toString('pem') + '\n';
  const interPem = inter.cert.toString('pem') + '\n';
  const create = { flag: 'wx' } as const;
  await writeNewPrivateFile(
    path.join(dir, PLUGIN_CA_FILES.caKey),
    KeyObject.from(inter.keys.privateKey).export({ type: 'pkcs8', format: 'pem' }) as string,
  );
  await writeFile(path.join(dir, PLUGIN_CA_FILES.rootCert), rootPem, create);
  await writeFile(path.join(dir, PLUGIN_CA_FILES.caCert), interPem, create);
  await writeFile(path.join(dir, PLUGIN_CA_FILES.certChain), interPem + rootPem, create);
}
