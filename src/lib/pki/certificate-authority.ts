import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { x509, subtle, EC_P256 } from './x509.js';
import { splitPemCertificates } from './pem.js';
import { MeshError } from '../errors.js';

/** Istio's plug-in CA file names (`cacerts` secret). */
export const PLUGIN_CA_FILES = {
  caCert: 'ca-cert.pem',
  caKey: 'ca-key.pem',
  rootCert: 'root-cert.pem',
  certChain: 'cert-chain.pem',
} as const;

/** Lifetime of a generated self-signed root: Istio's self-signed CA default is 10 years. */
const SELF_SIGNED_ROOT_TTL_MS = 10 * 365 * 24 * 3600 * 1000;
/** Allowance for clocks of peers that are slightly behind ours. */
const CLOCK_SKEW_MS = 60_000;

type SigningAlgorithm = { name: 'ECDSA'; hash: 'SHA-256' } | { name: 'RSASSA-PKCS1-v1_5'; hash: 'SHA-256' };

/**
 * Signs workload certificates from a CSR. The response chain has the shape of Istio's CreateCertificate reply
 * (spec §2.3): leaf, then intermediates, then the whole root bundle last.
 */
export class CertificateAuthority {
  private constructor(
    private readonly caCert: x509.X509Certificate,
    private readonly caKey: CryptoKey,
    private readonly alg: SigningAlgorithm,
    /** Intermediates served after the leaf (ca-cert and anything between it and the root). */
    readonly intermediatesPem: readonly string[],
    /** The trust anchors, as one PEM bundle. */
    readonly rootBundlePem: string,
  ) {}

  /** Loads Istio's plug-in CA files from `dir`. Errors name the file and what is wrong with it. */
  static async fromPluginDir(dir: string): Promise<CertificateAuthority> {
    const read = async (f: string): Promise<string> => {
      try {
        return await readFile(path.join(dir, f), 'utf8');
      } catch (e) {
        throw new MeshError('ZT_ERR_CA_FILES', `cannot read ${path.join(dir, f)}: ${(e as Error).message}; a plug-in CA directory needs ${Object.values(PLUGIN_CA_FILES).join(', ')}`);
      }
    };
    const [certPem, keyPem, rootPem, chainPem] = await Promise.all([
      read(PLUGIN_CA_FILES.caCert),
      read(PLUGIN_CA_FILES.caKey),
      read(PLUGIN_CA_FILES.rootCert),
      read(PLUGIN_CA_FILES.certChain),
    ]);
    const certs = splitPemCertificates(certPem);
    if (certs.length === 0) throw new MeshError('ZT_ERR_CA_FILES', `${path.join(dir, PLUGIN_CA_FILES.caCert)} holds no PEM certificate`);
    const roots = splitPemCertificates(rootPem);
    if (roots.length === 0) throw new MeshError('ZT_ERR_CA_FILES', `${path.join(dir, PLUGIN_CA_FILES.rootCert)} holds no PEM certificate`);
    const caCert = new x509.X509Certificate(certs[0]!);
    const { key, alg } = await importSigningKey(keyPem, path.join(dir, PLUGIN_CA_FILES.caKey));
    const nodeCa = new X509Certificate(certs[0]!);
    if (!nodeCa.checkPrivateKey(createPrivateKey(keyPem))) {
      throw new MeshError('ZT_ERR_CA_FILES', `${PLUGIN_CA_FILES.caKey} does not match ${PLUGIN_CA_FILES.caCert} in ${dir}`);
    }
    // Serve ca-cert and its chain up to, but not including, the roots.
    const rootSet = new Set(roots.map((r) => new X509Certificate(r).fingerprint256));
    const chain = splitPemCertificates(chainPem).length > 0 ? splitPemCertificates(chainPem) : certs;
    const intermediates = chain.filter((c) => !rootSet.has(new X509Certificate(c).fingerprint256));
    if (!rootSet.has(nodeCa.fingerprint256) && !intermediates.some((c) => new X509Certificate(c).fingerprint256 === nodeCa.fingerprint256)) {
      intermediates.unshift(certs[0]!);
    }
    return new CertificateAuthority(caCert, key, alg, intermediates, roots.join(''));
  }

  /** A new self-signed ECDSA P-256 root that signs leaves directly. */
  static async selfSigned(trustDomain: string): Promise<CertificateAuthority> {
    const { cert, keys } = await createRoot(`O=${trustDomain}`);
    return new CertificateAuthority(cert, keys.privateKey, EC_P256, [], cert.toString('pem') + '\n');
  }

  /**
   * Signs `csrPem` for exactly `uri` (the CSR's own SANs are checked by the caller where that matters; the
   * certificate carries only `uri`). Returns [leaf, ...intermediates, rootBundle].
   */
  async sign(csrPem: string, uri: string, ttlSeconds: number): Promise<string[]> {
    return this.signWith(csrPem, [{ type: 'url', value: uri }], ttlSeconds);
  }

  /** Signs `csrPem` with exactly `sans` (URI or DNS) as a critical SAN extension. */
  async signWith(csrPem: string, sans: readonly { type: 'url' | 'dns'; value: string }[], ttlSeconds: number): Promise<string[]> {
    let csr: x509.Pkcs10CertificateRequest;
    try {
      csr = new x509.Pkcs10CertificateRequest(csrPem);
    } catch (e) {
      throw new MeshError('ISTIOD_ERR_CSR', `cannot parse CSR: ${(e as Error).message}`);
    }
    if (!(await csr.verify())) throw new MeshError('ISTIOD_ERR_CSR', 'CSR signature does not verify');
    const now = Date.now();
    const notAfter = new Date(Math.min(now + ttlSeconds * 1000, this.caCert.notAfter.getTime()));
    const leaf = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: '',
      issuer: this.caCert.subject,
      notBefore: new Date(now - 1000),
      notAfter,
      publicKey: csr.publicKey,
      signingKey: this.caKey,
      signingAlgorithm: this.alg,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
        await x509.AuthorityKeyIdentifierExtension.create(this.caCert, false),
        new x509.SubjectAlternativeNameExtension(sans.map((n) => ({ type: n.type, value: n.value })), true),
      ],
    });
    return [leaf.toString('pem') + '\n', ...this.intermediatesPem, this.rootBundlePem];
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

/** The URI SANs a CSR asks for. */
export function csrUriSans(csrPem: string): string[] {
  const csr = new x509.Pkcs10CertificateRequest(csrPem);
  const ext = csr.extensions.find((e): e is x509.SubjectAlternativeNameExtension => e instanceof x509.SubjectAlternativeNameExtension);
  return ext === undefined ? [] : ext.names.items.filter((n) => n.type === 'url').map((n) => n.value);
}

function randomSerial(): string {
  const b = randomBytes(16);
  b[0] = b[0]! & 0x7f; // positive
  return b.toString('hex');
}

async function createRoot(name: string): Promise<{ cert: x509.X509Certificate; keys: CryptoKeyPair }> {
  const keys = await subtle.generateKey(EC_P256, true, ['sign', 'verify']);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name,
    notBefore: new Date(now - CLOCK_SKEW_MS),
    notAfter: new Date(now + SELF_SIGNED_ROOT_TTL_MS),
    keys,
    signingAlgorithm: EC_P256,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, keys };
}

async function importSigningKey(pem: string, file: string): Promise<{ key: CryptoKey; alg: SigningAlgorithm }> {
  let k;
  try {
    k = createPrivateKey(pem);
  } catch (e) {
    throw new MeshError('ZT_ERR_CA_FILES', `${file} is not a PEM private key: ${(e as Error).message}`);
  }
  const der = k.export({ type: 'pkcs8', format: 'der' });
  if (k.asymmetricKeyType === 'ec') {
    const curve = k.asymmetricKeyDetails?.namedCurve;
    const namedCurve = curve === 'prime256v1' ? 'P-256' : curve === 'secp384r1' ? 'P-384' : undefined;
    if (namedCurve === undefined) throw new MeshError('ZT_ERR_CA_FILES', `${file}: unsupported EC curve ${String(curve)} (use P-256 or P-384)`);
    const key = await subtle.importKey('pkcs8', der, { name: 'ECDSA', namedCurve }, false, ['sign']);
    return { key, alg: { name: 'ECDSA', hash: 'SHA-256' } };
  }
  if (k.asymmetricKeyType === 'rsa') {
    const key = await subtle.importKey('pkcs8', der, { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['sign']);
    return { key, alg: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } };
  }
  throw new MeshError('ZT_ERR_CA_FILES', `${file}: unsupported key type ${String(k.asymmetricKeyType)} (use EC or RSA)`);
}

/**
 * Writes a plug-in CA directory (root + intermediate) like Istio's `make -f Makefile.selfsigned.mk <cluster>-cacerts`.
 * Used by `amesh x create-ca`, the demo and tests, so that two processes share one trust anchor.
 */
export async function writePluginCaDir(dir: string, trustDomain = 'cluster.local'): Promise<void> {
  const root = await createRoot(`O=Istio, CN=Root CA`);
  const keys = await subtle.generateKey(EC_P256, true, ['sign', 'verify']);
  const now = Date.now();
  const inter = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: `O=Istio, CN=Intermediate CA, L=${trustDomain}`,
    issuer: root.cert.subject,
    notBefore: new Date(now - CLOCK_SKEW_MS),
    notAfter: new Date(now + SELF_SIGNED_ROOT_TTL_MS / 2),
    publicKey: keys.publicKey,
    signingKey: root.keys.privateKey,
    signingAlgorithm: EC_P256,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(root.cert, false),
    ],
  });
  const pkcs8 = await subtle.exportKey('pkcs8', keys.privateKey);
  await mkdir(dir, { recursive: true });
  const rootPem = root.cert.toString('pem') + '\n';
  const interPem = inter.toString('pem') + '\n';
  await writeFile(path.join(dir, PLUGIN_CA_FILES.rootCert), rootPem);
  await writeFile(path.join(dir, PLUGIN_CA_FILES.caCert), interPem);
  await writeFile(path.join(dir, PLUGIN_CA_FILES.certChain), interPem + rootPem);
  await writeFile(path.join(dir, PLUGIN_CA_FILES.caKey), x509.PemConverter.encode(pkcs8, 'PRIVATE KEY') + '\n', { mode: 0o600 });
}
