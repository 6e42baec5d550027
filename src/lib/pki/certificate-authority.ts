import { generateKeyPair, KeyObject, sign, X509Certificate } from 'node:crypto';
import { promisify } from 'node:util';
import { MeshError } from '../errors.js';
import { keyIdentifier, subjectDer } from './certificate-fields.js';
import {
  bitString,
  booleanTrue,
  contextTag,
  nullValue,
  objectIdentifier,
  octetString,
  sequence,
  smallInteger,
  time,
  tlv,
  unsignedInteger,
} from './der-writer.js';
import { CLOCK_SKEW_GRACE_MS, randomSerial } from './issue-policy.js';
import { parseCsrPem } from './parse-csr.js';
import { pemEncode } from './pem.js';
import { readPluginCaDir } from './plugin-ca-dir.js';
import type { SigningCa } from './signing-ca.js';

export { PLUGIN_CA_FILES, writePluginCaDir } from './plugin-ca-dir.js';
export { csrUriSans } from './parse-csr.js';

/** A subject or DNS/URI SAN a certificate is issued for. */
export interface SubjectAltName {
  readonly type: 'url' | 'dns';
  readonly value: string;
}

/** RFC 5280 and RFC 5758 object identifiers of what a workload certificate carries. */
const OID = {
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  authorityKeyIdentifier: '2.5.29.35',
  subjectAltName: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  sha256WithRsa: '1.2.840.113549.1.1.11',
} as const;
/** keyUsage digitalSignature (bit 0) and keyEncipherment (bit 2): a BIT STRING of one byte 1010 0000, its last 5 bits unused. */
const BIT_STRING_TAG = 0x03;
const LEAF_KEY_USAGE = Buffer.from([5, 0xa0]);
/** GeneralName tags: [2] dNSName, [6] uniformResourceIdentifier. */
const GENERAL_NAME_TAG = { dns: 2, url: 6 } as const;
const X509_V3 = 2;

const generateEcKeyPair = promisify(generateKeyPair);

/**
 * Signs workload certificates from a CSR, as Istio's CA does (security/pkg/pki/util/generate_cert.go): empty
 * subject, the SANs as one critical extension, notBefore backdated by Istio's clock-skew grace, notAfter capped
 * at the CA's own, and the issuer copied byte for byte from the CA's subject. The response chain has the shape of
 * Istio's CreateCertificate reply: leaf, then intermediates, then the whole root bundle last. The certificate is
 * written with der-writer.ts and signed with `node:crypto` (der-writer.ts says why not @peculiar/x509).
 */
export class CertificateAuthority {
  private readonly caNotAfter: number;

  private constructor(private readonly ca: SigningCa) {
    this.caNotAfter = Date.parse(ca.caCert.validTo);
  }

  /** The trust anchors, as one PEM bundle. */
  get rootBundlePem(): string {
    return this.ca.rootBundlePem;
  }

  /** Loads and verifies Istio's plug-in CA files from `dir` (either layout; errors: ZT_ERR_CA_FILES, naming the file). */
  static async fromPluginDir(dir: string): Promise<CertificateAuthority> {
    return new CertificateAuthority(await readPluginCaDir(dir));
  }

  /** A CA checked by `verifySigningCa` (signing-ca.ts). */
  static fromSigningCa(ca: SigningCa): CertificateAuthority {
    return new CertificateAuthority(ca);
  }

  /** A new self-signed ECDSA P-256 root that signs leaves directly. */
  static async selfSigned(trustDomain: string): Promise<CertificateAuthority> {
    const { createSelfSignedRoot } = await import('./ca-certificates.js');
    const { cert, keys } = await createSelfSignedRoot(`O=${trustDomain}`);
    const pem = cert.toString('pem') + '\n';
    const caCert = new X509Certificate(pem);
    return new CertificateAuthority({
      caCert,
      issuerDer: subjectDer(caCert),
      caKey: KeyObject.from(keys.privateKey),
      intermediatesPem: [],
      rootBundlePem: pem,
    });
  }

  /** Signs `csrPem` for exactly `uri`. Returns [leaf, ...intermediates, rootBundle]. */
  async sign(csrPem: string, uri: string, ttlSeconds: number): Promise<string[]> {
    return this.signWith(csrPem, [{ type: 'url', value: uri }], ttlSeconds);
  }

  /**
   * Signs `csrPem` with exactly `sans` as a critical SAN extension, for `ttlSeconds` capped at the CA's notAfter.
   * Errors: ISTIOD_ERR_CSR for a CSR that is malformed, has trailing data or a bad signature; ZT_ERR_CA_FILES when
   * the CA itself has expired.
   */
  signWith(csrPem: string, sans: readonly SubjectAltName[], ttlSeconds: number): Promise<string[]> {
    // What the executor throws (a bad CSR, an expired CA) rejects the promise.
    return new Promise((resolve) => {
      const csr = parseCsrPem(csrPem);
      if (!csr.verify()) throw new MeshError('ISTIOD_ERR_CSR', 'the CSR signature does not verify');
      resolve(this.issue(csr.spki, sans, ttlSeconds));
    });
  }

  /** The chain for a certificate to `spki` (SubjectPublicKeyInfo DER) for `sans`. */
  issue(spki: Buffer, sans: readonly SubjectAltName[], ttlSeconds: number): string[] {
    const now = Date.now();
    if (now >= this.caNotAfter)
      throw new MeshError(
        'ZT_ERR_CA_FILES',
        `the signing CA certificate expired on ${new Date(this.caNotAfter).toISOString()}; install a new one`,
      );
    const ec = this.ca.caKey.asymmetricKeyType === 'ec';
    const algorithm = ec
      ? sequence(objectIdentifier(OID.ecdsaWithSha256))
      : sequence(objectIdentifier(OID.sha256WithRsa), nullValue());
    const extension = (oid: string, critical: boolean, value: Buffer): Buffer =>
      sequence(objectIdentifier(oid), ...(critical ? [booleanTrue()] : []), octetString(value));
    const tbs = sequence(
      contextTag(0, true, smallInteger(X509_V3)),
      unsignedInteger(Buffer.from(randomSerial(), 'hex')),
      algorithm,
      this.ca.issuerDer,
      sequence(
        time(new Date(now - CLOCK_SKEW_GRACE_MS)),
        time(new Date(Math.min(now + ttlSeconds * 1000, this.caNotAfter))),
      ),
      sequence(),
      spki,
      contextTag(
        3,
        true,
        sequence(
          extension(OID.basicConstraints, true, sequence()),
          extension(OID.keyUsage, true, tlv(BIT_STRING_TAG, LEAF_KEY_USAGE)),
          extension(
            OID.extKeyUsage,
            false,
            sequence(objectIdentifier(OID.serverAuth), objectIdentifier(OID.clientAuth)),
          ),
          extension(OID.authorityKeyIdentifier, false, sequence(contextTag(0, false, keyIdentifier(this.ca.caCert)))),
          extension(
            OID.subjectAltName,
            true,
            sequence(...sans.map((n) => contextTag(GENERAL_NAME_TAG[n.type], false, Buffer.from(n.value, 'ascii')))),
          ),
        ),
      ),
    );
    const signature = sign('sha256', tbs, ec ? { key: this.ca.caKey, dsaEncoding: 'der' } : this.ca.caKey);
    const leaf = pemEncode('CERTIFICATE', sequence(tbs, algorithm, bitString(signature)));
    return [leaf + '\n', ...this.ca.intermediatesPem, this.ca.rootBundlePem];
  }
}

/**
 * A serving certificate (for istiod's gRPC port) with DNS SANs, from a fresh P-256 key. Returns the key and the
 * chain as `sign` does.
 */
export async function issueServingCertificate(
  ca: CertificateAuthority,
  dnsNames: readonly string[],
  ttlSeconds: number,
): Promise<{ keyPem: string; chain: string[] }> {
  const { publicKey, privateKey } = await generateEcKeyPair('ec', { namedCurve: 'P-256' });
  const chain = ca.issue(
    publicKey.export({ type: 'spki', format: 'der' }),
    dnsNames.map((value) => ({ type: 'dns' as const, value })),
    ttlSeconds,
  );
  return { keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, chain };
}
