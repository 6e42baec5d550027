import { x509, subtle, EC_P256 } from './x509.js';
import { MeshError } from '../errors.js';
import { CLOCK_SKEW_GRACE_MS, createSelfSignedRoot, exactSubjectName, randomSerial } from './ca-certificates.js';
import { parseCsrPem } from './parse-csr.js';
import { readPluginCaDir, type PluginCa } from './plugin-ca-dir.js';

export { PLUGIN_CA_FILES, writePluginCaDir } from './plugin-ca-dir.js';
export { csrUriSans } from './parse-csr.js';

/** A subject or DNS/URI SAN a certificate is issued for. */
export interface SubjectAltName {
  readonly type: 'url' | 'dns';
  readonly value: string;
}

/**
 * Signs workload certificates from a CSR, as Istio's CA does (security/pkg/pki/util/generate_cert.go): empty
 * subject, the SANs as one critical extension, notBefore backdated by Istio's clock-skew grace, notAfter capped
 * at the CA's own, and the issuer copied byte for byte from the CA's subject. The response chain has the shape of
 * Istio's CreateCertificate reply: leaf, then intermediates, then the whole root bundle last.
 */
export class CertificateAuthority {
  private constructor(private readonly ca: PluginCa) {}

  /** The trust anchors, as one PEM bundle. */
  get rootBundlePem(): string {
    return this.ca.rootBundlePem;
  }

  /** Loads and verifies Istio's plug-in CA files from `dir` (errors: ZT_ERR_CA_FILES, naming the file). */
  static async fromPluginDir(dir: string): Promise<CertificateAuthority> {
    return new CertificateAuthority(await readPluginCaDir(dir));
  }

  /** A new self-signed ECDSA P-256 root that signs leaves directly. */
  static async selfSigned(trustDomain: string): Promise<CertificateAuthority> {
    const { cert, keys } = await createSelfSignedRoot(`O=${trustDomain}`);
    const pem = cert.toString('pem') + '\n';
    return new CertificateAuthority({ caCert: cert, issuerName: exactSubjectName(cert, 'self-signed root'), caKey: keys.privateKey, alg: { name: 'ECDSA', hash: 'SHA-256' }, intermediatesPem: [], rootBundlePem: pem });
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
  async signWith(csrPem: string, sans: readonly SubjectAltName[], ttlSeconds: number): Promise<string[]> {
    const csr = parseCsrPem(csrPem);
    if (!(await csr.verify())) throw new MeshError('ISTIOD_ERR_CSR', 'the CSR signature does not verify');
    const now = Date.now();
    const caNotAfter = this.ca.caCert.notAfter.getTime();
    if (now >= caNotAfter) throw new MeshError('ZT_ERR_CA_FILES', `the signing CA certificate expired on ${this.ca.caCert.notAfter.toISOString()}; install a new one`);
    const leaf = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: '',
      issuer: this.ca.issuerName,
      notBefore: new Date(now - CLOCK_SKEW_GRACE_MS),
      notAfter: new Date(Math.min(now + ttlSeconds * 1000, caNotAfter)),
      publicKey: csr.publicKey,
      signingKey: this.ca.caKey,
      signingAlgorithm: this.ca.alg,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
        await x509.AuthorityKeyIdentifierExtension.create(this.ca.caCert, false),
        new x509.SubjectAlternativeNameExtension(sans.map((n) => ({ type: n.type, value: n.value })), true),
      ],
    });
    return [leaf.toString('pem') + '\n', ...this.ca.intermediatesPem, this.ca.rootBundlePem];
  }
}

/**
 * A serving certificate (for istiod's gRPC port) with DNS SANs, from a fresh P-256 key. Returns the key and the
 * chain as `sign` does.
 */
export async function issueServingCertificate(ca: CertificateAuthority, dnsNames: readonly string[], ttlSeconds: number): Promise<{ keyPem: string; chain: string[] }> {
  const keys = await subtle.generateKey(EC_P256, true, ['sign', 'verify']);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ keys, signingAlgorithm: EC_P256 });
  const pkcs8 = await subtle.exportKey('pkcs8', keys.privateKey);
  const chain = await ca.signWith(csr.toString('pem'), dnsNames.map((value) => ({ type: 'dns' as const, value })), ttlSeconds);
  return { keyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY'), chain };
}
