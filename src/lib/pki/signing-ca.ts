/**
 * A signing CA checked as Istio checks one before it signs anything (security/pkg/pki/util/keycertbundle.go
 * `Verify`, security/pkg/pki/ca/ca.go `IsCA`), from PEM text wherever it was kept: a plug-in CA directory
 * (plugin-ca-dir.ts) or the `istio-ca-secret` Secret (src/istiod/ca/istio-ca-secret.ts). Each error names where
 * the faulty part came from, in the caller's terms (a file path, a Secret's key).
 *
 * Node has no certificate path verification API, so the chain from the signing certificate to a root is walked
 * here with Node's `X509Certificate.checkIssued` and `verify` on each link.
 */
import { X509Certificate, createPrivateKey, KeyObject } from 'node:crypto';
import { MeshError, type ErrorCode } from '../errors.js';
import { subjectDer } from './certificate-fields.js';
import { splitPemCertificates } from './pem.js';

/** The four parts of a signing CA, as Istio's plug-in CA names them (ca-cert, ca-key, root-cert, cert-chain). */
export interface SigningCaPems {
  /** The signing certificate (first PEM block). */
  readonly caCert: string;
  readonly caKey: string;
  /** The trust anchors, one or more. */
  readonly rootCert: string;
  /** The signing certificate's chain up to (and possibly including) a root; may be empty. */
  readonly certChain: string;
}
export type SigningCaPart = keyof SigningCaPems;

/** Where each part came from, for error messages. */
export interface SigningCaOrigin {
  readonly code: ErrorCode;
  /** The short name of each part (`ca-cert.pem`, `tls.crt`), for advice on where to put what. */
  readonly names: Readonly<Record<SigningCaPart, string>>;
  /** The full name of the part called `name` (a path, `Secret ns/name key k`), starting each error. */
  readonly locate: (name: string) => string;
}

/** A verified signing CA, ready to sign. */
export interface SigningCa {
  readonly caCert: X509Certificate;
  /** The signing certificate's subject DER, the issuer of what it signs (byte for byte). */
  readonly issuerDer: Buffer;
  /** An EC (P-256 or P-384) or RSA key; signatures are made with SHA-256. */
  readonly caKey: KeyObject;
  /** Served after the leaf: the signing certificate and anything between it and the root. */
  readonly intermediatesPem: readonly string[];
  readonly rootBundlePem: string;
}

/** Longest chain walked from the signing certificate to a root; real ones have one or two links. */
const MAX_CHAIN_LINKS = 8;

const oneLine = (c: X509Certificate): string => c.subject.replace(/\n/g, ', ');

/** Checks `pems` (see the file comment); every error is `origin.code` and names the part at fault. */
export function verifySigningCa(pems: SigningCaPems, origin: SigningCaOrigin, now = Date.now()): SigningCa {
  const { names } = origin;
  const fail = (part: SigningCaPart, why: string): never => {
    throw new MeshError(origin.code, `${origin.locate(names[part])}: ${why}`);
  };
  const parse = (part: SigningCaPart, blocks: string[]): X509Certificate[] =>
    blocks.map((p, i) => {
      try {
        return new X509Certificate(p);
      } catch (e) {
        return fail(part, `certificate #${i + 1} does not parse: ${(e as Error).message}`);
      }
    });
  const caPems = splitPemCertificates(pems.caCert);
  if (caPems.length === 0) fail('caCert', 'holds no PEM certificate');
  const rootPems = splitPemCertificates(pems.rootCert);
  const roots = parse('rootCert', rootPems);
  if (roots.length === 0) fail('rootCert', 'holds no PEM certificate');
  const chainPems = splitPemCertificates(pems.certChain);
  const chain = parse('certChain', chainPems);
  const [ca] = parse('caCert', caPems.slice(0, 1)) as [X509Certificate];

  if (!ca.ca)
    fail('caCert', 'is not a CA certificate (it needs basicConstraints CA:TRUE to sign workload certificates)');
  const checkValidity = (part: SigningCaPart, c: X509Certificate): void => {
    if (now < Date.parse(c.validFrom)) fail(part, `certificate "${oneLine(c)}" is not valid until ${c.validFrom}`);
    if (now > Date.parse(c.validTo)) fail(part, `certificate "${oneLine(c)}" expired on ${c.validTo}`);
  };
  checkValidity('caCert', ca);
  const key = parsePrivateKey(pems.caKey, (why) => fail('caKey', why));
  if (!ca.checkPrivateKey(key)) fail('caKey', `does not match the public key of ${names.caCert}`);

  // Walk the signing certificate -> chain certificates -> a root.
  const isRoot = new Set(roots.map((r) => r.fingerprint256));
  const issues = (parent: X509Certificate, child: X509Certificate): boolean =>
    child.checkIssued(parent) && child.verify(parent.publicKey);
  let cur = ca;
  for (let links = 0; !isRoot.has(cur.fingerprint256); links++) {
    const root = roots.find((r) => issues(r, cur));
    if (root !== undefined) {
      checkValidity('rootCert', root);
      break;
    }
    const next = chain.find((c) => c.fingerprint256 !== cur.fingerprint256 && c.ca && issues(c, cur));
    if (next === undefined || links >= MAX_CHAIN_LINKS) {
      fail(
        'caCert',
        `does not chain to a certificate in ${names.rootCert} through ${names.certChain} (no issuer found for "${oneLine(cur)}"); put the intermediates in ${names.certChain} and the root in ${names.rootCert}`,
      );
    }
    checkValidity('certChain', next!);
    cur = next!;
  }

  checkSigningKey(key, (why) => fail('caKey', why));
  // Serve the signing certificate and its chain up to, but not including, the roots.
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

function parsePrivateKey(pem: string, fail: (why: string) => never): KeyObject {
  if (pem.trim() === '') fail('is empty; it must hold the PEM private key of the signing certificate');
  try {
    return createPrivateKey(pem);
  } catch (e) {
    return fail(`not a PEM private key: ${(e as Error).message}`);
  }
}

function checkSigningKey(k: KeyObject, fail: (why: string) => never): void {
  if (k.asymmetricKeyType === 'ec') {
    const curve = k.asymmetricKeyDetails?.namedCurve;
    if (curve !== 'prime256v1' && curve !== 'secp384r1')
      fail(`unsupported EC curve ${String(curve)} (use P-256 or P-384)`);
    return;
  }
  if (k.asymmetricKeyType !== 'rsa') fail(`unsupported key type ${String(k.asymmetricKeyType)} (use EC or RSA)`);
}
