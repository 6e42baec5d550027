/**
 * Istio's plug-in CA directory (the `cacerts` secret): reading it with the checks Istio makes before it signs
 * anything (security/pkg/pki/util/keycertbundle.go `Verify`, security/pkg/pki/ca/ca.go `IsCA`), and writing a new
 * one like `make -f tools/certs/Makefile.selfsigned.mk <cluster>-cacerts`, never over existing CA material.
 *
 * Node has no certificate path verification API, so the chain from ca-cert.pem to root-cert.pem is walked here
 * with Node's `X509Certificate.checkIssued` and `verify` on each link.
 */
import { X509Certificate, createPrivateKey, KeyObject } from 'node:crypto';
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { MeshError } from '../errors.js';
import { subjectDer } from './certificate-fields.js';
import { SELF_SIGNED_ROOT_TTL_MS } from './issue-policy.js';
import { splitPemCertificates } from './pem.js';
import { PRIVATE_DIR_MODE, writeNewPrivateFile } from './private-files.js';

/** Istio's plug-in CA file names (`cacerts` secret). */
export const PLUGIN_CA_FILES = {
  caCert: 'ca-cert.pem',
  caKey: 'ca-key.pem',
  rootCert: 'root-cert.pem',
  certChain: 'cert-chain.pem',
} as const;

/** Longest chain walked from ca-cert.pem to a root; real ones have one or two links. */
const MAX_CHAIN_LINKS = 8;

/** A verified plug-in CA, ready to sign. */
export interface PluginCa {
  readonly caCert: X509Certificate;
  /** ca-cert.pem's subject DER, the issuer of what it signs (byte for byte). */
  readonly issuerDer: Buffer;
  /** An EC (P-256 or P-384) or RSA key; signatures are made with SHA-256. */
  readonly caKey: KeyObject;
  /** Served after the leaf: ca-cert and anything between it and the root. */
  readonly intermediatesPem: readonly string[];
  readonly rootBundlePem: string;
}

/** Reads and verifies `dir`. Every error is ZT_ERR_CA_FILES and names the file and what to do. */
export async function readPluginCaDir(dir: string, now = Date.now()): Promise<PluginCa> {
  const file = (f: string): string => path.join(dir, f);
  const fail = (f: string, why: string): never => {
    throw new MeshError('ZT_ERR_CA_FILES', `${file(f)}: ${why}`);
  };
  const read = async (f: string): Promise<string> => {
    try {
      return await readFile(file(f), 'utf8');
    } catch (e) {
      return fail(
        f,
        `cannot read it (${(e as Error).message}); a plug-in CA directory needs ${Object.values(PLUGIN_CA_FILES).join(', ')}`,
      );
    }
  };
  const [certPem, keyPem, rootPem, chainPem] = await Promise.all([
    read(PLUGIN_CA_FILES.caCert),
    read(PLUGIN_CA_FILES.caKey),
    read(PLUGIN_CA_FILES.rootCert),
    read(PLUGIN_CA_FILES.certChain),
  ]);
  const parse = (f: string, pems: string[]): X509Certificate[] =>
    pems.map((p, i) => {
      try {
        return new X509Certificate(p);
      } catch (e) {
        return fail(f, `certificate #${i + 1} does not parse: ${(e as Error).message}`);
      }
    });
  const caPems = splitPemCertificates(certPem);
  if (caPems.length === 0) fail(PLUGIN_CA_FILES.caCert, 'holds no PEM certificate');
  const rootPems = splitPemCertificates(rootPem);
  const roots = parse(PLUGIN_CA_FILES.rootCert, rootPems);
  if (roots.length === 0) fail(PLUGIN_CA_FILES.rootCert, 'holds no PEM certificate');
  const chainPems = splitPemCertificates(chainPem);
  const chain = parse(PLUGIN_CA_FILES.certChain, chainPems);
  const [ca] = parse(PLUGIN_CA_FILES.caCert, caPems.slice(0, 1)) as [X509Certificate];

  if (!ca.ca)
    fail(
      PLUGIN_CA_FILES.caCert,
      'is not a CA certificate (it needs basicConstraints CA:TRUE to sign workload certificates)',
    );
  const checkValidity = (f: string, c: X509Certificate): void => {
    if (now < Date.parse(c.validFrom))
      fail(f, `certificate "${c.subject.replace(/\n/g, ', ')}" is not valid until ${c.validFrom}`);
    if (now > Date.parse(c.validTo)) fail(f, `certificate "${c.subject.replace(/\n/g, ', ')}" expired on ${c.validTo}`);
  };
  checkValidity(PLUGIN_CA_FILES.caCert, ca);
  const key = parsePrivateKey(keyPem, file(PLUGIN_CA_FILES.caKey));
  if (!ca.checkPrivateKey(key))
    fail(PLUGIN_CA_FILES.caKey, `does not match the public key of ${PLUGIN_CA_FILES.caCert}`);

  // Walk ca-cert -> cert-chain.pem certificates -> a root.
  const isRoot = new Set(roots.map((r) => r.fingerprint256));
  const issues = (parent: X509Certificate, child: X509Certificate): boolean =>
    child.checkIssued(parent) && child.verify(parent.publicKey);
  let cur = ca;
  for (let links = 0; !isRoot.has(cur.fingerprint256); links++) {
    const root = roots.find((r) => issues(r, cur));
    if (root !== undefined) {
      checkValidity(PLUGIN_CA_FILES.rootCert, root);
      break;
    }
    const next = chain.find((c) => c.fingerprint256 !== cur.fingerprint256 && c.ca && issues(c, cur));
    if (next === undefined || links >= MAX_CHAIN_LINKS) {
      fail(
        PLUGIN_CA_FILES.caCert,
        `does not chain to a certificate in ${PLUGIN_CA_FILES.rootCert} through ${PLUGIN_CA_FILES.certChain} (no issuer found for "${cur.subject.replace(/\n/g, ', ')}"); put the intermediates in ${PLUGIN_CA_FILES.certChain} and the root in ${PLUGIN_CA_FILES.rootCert}`,
      );
    }
    checkValidity(PLUGIN_CA_FILES.certChain, next!);
    cur = next!;
  }

  checkSigningKey(key, file(PLUGIN_CA_FILES.caKey));
  // Serve ca-cert and its chain up to, but not including, the roots.
  const served = chainPems.length > 0 ? chainPems : caPems.slice(0, 1);
  const intermediatesPem = served.filter((p) => !isRoot.has(new X509Certificate(p).fingerprint256));
  if (
    !isRoot.has(ca.fingerprint256) &&
    !intermediatesPem.some((p) => new X509Certificate(p).fingerprint256 === ca.fingerprint256)
  )
    intermediatesPem.unshift(caPems[0]!);
  return {
    caCert: ca,
    issuerDer: subjectDer(ca),
    caKey: key,
    intermediatesPem,
    rootBundlePem: rootPems.join(''),
  };
}

function parsePrivateKey(pem: string, file: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (e) {
    throw new MeshError('ZT_ERR_CA_FILES', `${file}: not a PEM private key: ${(e as Error).message}`);
  }
}

function checkSigningKey(k: KeyObject, file: string): void {
  if (k.asymmetricKeyType === 'ec') {
    const curve = k.asymmetricKeyDetails?.namedCurve;
    if (curve !== 'prime256v1' && curve !== 'secp384r1')
      throw new MeshError('ZT_ERR_CA_FILES', `${file}: unsupported EC curve ${String(curve)} (use P-256 or P-384)`);
    return;
  }
  if (k.asymmetricKeyType !== 'rsa')
    throw new MeshError(
      'ZT_ERR_CA_FILES',
      `${file}: unsupported key type ${String(k.asymmetricKeyType)} (use EC or RSA)`,
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
