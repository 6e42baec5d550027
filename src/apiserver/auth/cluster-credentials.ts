/**
 * The embedded API server's cluster credentials, kept in `--data-dir` as kubeadm keeps them in /etc/kubernetes
 * (kubeadm's `pki/` file names: ca.crt/ca.key, apiserver.crt/apiserver.key, sa.key/sa.pub), and the admin
 * kubeconfig next to them (kubeadm's admin.conf layout: clusters, contexts, users, current-context).
 *
 * Created once, then only loaded: the `pki/` directory is built complete in a private temporary directory and
 * renamed into place, so a crash never leaves half a cluster identity, and an existing one is never replaced
 * (keys, tokens and kubeconfigs issued from it keep working). The data directory must be private to its owner,
 * as istiod's state directory (`ensurePrivateDir`). Two things may change on a later start, both public: the
 * serving certificate is reissued with the same key when the listen address is not among its SANs or it is
 * about to expire, and the kubeconfig is rewritten when the server URL changes.
 */
import { X509Certificate, createPrivateKey, createPublicKey, createHash, randomBytes } from 'node:crypto';
import { access, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';
import { importPKCS8, importSPKI, type CryptoKey as JoseKey } from 'jose';
import { stringify } from 'yaml';
import { MeshError } from '../../lib/errors.js';
import {
  CLOCK_SKEW_GRACE_MS,
  createSelfSignedRoot,
  exactSubjectName,
  randomSerial,
} from '../../lib/pki/ca-certificates.js';
import { ensurePrivateDir, writeNewPrivateFile } from '../../lib/pki/private-files.js';
import { EC_P256, subtle, x509 } from '../../lib/pki/x509.js';

/** The credential files under `DIR/pki`, named as kubeadm names them. */
export const PKI_FILES = {
  caCert: 'ca.crt',
  caKey: 'ca.key',
  servingCert: 'apiserver.crt',
  servingKey: 'apiserver.key',
  serviceAccountKey: 'sa.key',
  serviceAccountPublicKey: 'sa.pub',
  adminToken: 'admin.token',
} as const;
export const PKI_DIR = 'pki';
export const KUBECONFIG_FILE = 'kubeconfig';

/** Names in the admin kubeconfig. */
export const KUBECONFIG_NAMES = { cluster: 'amesh', user: 'admin', context: 'admin@amesh' } as const;

/** Serving certificates live a year, as kubeadm issues the API server's. */
const SERVING_CERT_TTL_MS = 365 * 24 * 3600 * 1000;
/** A serving certificate this close to expiry is reissued on start (kubeadm warns at 30 days). */
const SERVING_CERT_RENEW_BEFORE_MS = 30 * 24 * 3600 * 1000;
/** The admin token: 256 random bits. */
const ADMIN_TOKEN_BYTES = 32;
/** The service-account token signing algorithm: ECDSA P-256 keys sign ES256. */
export const SERVICE_ACCOUNT_ALG = 'ES256';

/**
 * The in-cluster names of the API server (the `kubernetes` Service in `default`), and loopback, which every
 * serving certificate carries, as kube-apiserver's self-signed and kubeadm's certificates do.
 */
const SERVING_DNS_NAMES = [
  'localhost',
  'kubernetes',
  'kubernetes.default',
  'kubernetes.default.svc',
  'kubernetes.default.svc.cluster.local',
];
const SERVING_IPS = ['127.0.0.1', '::1'];

export interface ClusterCredentialsOptions {
  readonly dataDir: string;
  /** The host the API server listens on: an IP, a wildcard (`0.0.0.0`, `::`) or a DNS name. */
  readonly listenHost: string;
  readonly listenPort: number;
  /** The first IP of the service CIDR: the `kubernetes` Service's ClusterIP (10.96.0.1 for 10.96.0.0/16). */
  readonly serviceIp: string;
}

/** The key that signs and verifies service-account tokens. */
export interface ServiceAccountSigningKey {
  readonly privateKey: JoseKey;
  readonly publicKey: JoseKey;
  /** `kid` as Kubernetes derives it: base64url(SHA-256(DER SubjectPublicKeyInfo)). */
  readonly keyId: string;
  readonly publicKeyPem: string;
}

export interface ClusterCredentials {
  readonly caCertPem: string;
  readonly servingCertPem: string;
  readonly servingKeyPem: string;
  readonly serviceAccountKey: ServiceAccountSigningKey;
  readonly adminToken: string;
  readonly serverUrl: string;
  readonly kubeconfigPath: string;
}

const fail = (message: string, cause?: unknown): never => {
  throw new MeshError('APISERVER_ERR_DATA_DIR', message, cause !== undefined ? { cause } : undefined);
};

/** Loads the credentials in `opts.dataDir`, creating them the first time. Errors: APISERVER_ERR_DATA_DIR. */
export async function loadOrCreateClusterCredentials(opts: ClusterCredentialsOptions): Promise<ClusterCredentials> {
  await ensurePrivateDir(opts.dataDir, 'APISERVER_ERR_DATA_DIR', 'API server data directory');
  const pki = path.join(opts.dataDir, PKI_DIR);
  if (!(await exists(pki))) await createPkiDir(opts.dataDir, pki, requiredSans(opts));
  await ensurePrivateDir(pki, 'APISERVER_ERR_DATA_DIR', 'API server credentials directory');
  const creds = await loadPkiDir(pki, opts);
  const kubeconfigPath = path.join(opts.dataDir, KUBECONFIG_FILE);
  await writeIfChanged(kubeconfigPath, kubeconfigYaml(creds.caCertPem, creds.serverUrl, creds.adminToken));
  return { ...creds, kubeconfigPath };
}

/** A wildcard listen address's loopback of the same family, where a local client reaches it; any other host as is. */
export function loopbackForWildcard(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '::1';
  return host;
}

/** The URL clients use: a wildcard listen address is reached on loopback of the same family. */
export function serverUrl(host: string, port: number): string {
  const h = loopbackForWildcard(host);
  return `https://${isIP(h) === 6 ? `[${h}]` : h}:${port}`;
}

/** The admin kubeconfig, in the layout kubectl, client-go, client-node and python's kubernetes read. */
export function kubeconfigYaml(caCertPem: string, server: string, token: string): string {
  const n = KUBECONFIG_NAMES;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: n.cluster, cluster: { 'certificate-authority-data': Buffer.from(caCertPem).toString('base64'), server } },
    ],
    contexts: [{ name: n.context, context: { cluster: n.cluster, user: n.user } }],
    'current-context': n.context,
    preferences: {},
    users: [{ name: n.user, user: { token } }],
  });
}

interface Sans {
  readonly dns: readonly string[];
  readonly ips: readonly string[];
}

function requiredSans(opts: ClusterCredentialsOptions): Sans {
  const dns = [...SERVING_DNS_NAMES];
  const ips = [...SERVING_IPS, opts.serviceIp];
  const host = opts.listenHost;
  if (isIP(host) === 0) dns.push(host);
  else if (host !== '0.0.0.0' && host !== '::') ips.push(host);
  return { dns: [...new Set(dns)], ips: [...new Set(ips.map(canonicalIp))] };
}

/** One spelling per address, so `::1` and `0:0:0:0:0:0:0:1` compare equal. */
function canonicalIp(ip: string): string {
  return isIP(ip) === 6 ? new URL(`http://[${ip}]`).hostname.slice(1, -1) : ip;
}

async function exists(p: string): Promise<boolean> {
  return access(p).then(
    () => true,
    (e: unknown) =>
      (e as NodeJS.ErrnoException).code === 'ENOENT' ? false : fail(`cannot access ${p}: ${(e as Error).message}`),
  );
}

async function createPkiDir(dataDir: string, pki: string, sans: Sans): Promise<void> {
  const tmp = await mkdtemp(path.join(dataDir, '.pki-')).catch((e: unknown) =>
    fail(`cannot create credentials in ${dataDir}: ${(e as Error).message}`),
  );
  try {
    const root = await createSelfSignedRoot('CN=amesh-cluster-ca');
    const caCertPem = root.cert.toString('pem') + '\n';
    const caKeyPem = await pkcs8Pem(root.keys.privateKey);
    const servingKeys = await subtle.generateKey(EC_P256, true, ['sign', 'verify']);
    const servingCertPem = await issueServingCert(caCertPem, caKeyPem, await pkcs8Pem(servingKeys.privateKey), sans);
    const saKeys = await subtle.generateKey(EC_P256, true, ['sign', 'verify']);
    const saPub = x509.PemConverter.encode(await subtle.exportKey('spki', saKeys.publicKey), 'PUBLIC KEY') + '\n';
    const write = (f: string, data: string): Promise<void> => writeNewPrivateFile(path.join(tmp, f), data);
    await write(PKI_FILES.caCert, caCertPem);
    await write(PKI_FILES.caKey, caKeyPem);
    await write(PKI_FILES.servingKey, await pkcs8Pem(servingKeys.privateKey));
    await write(PKI_FILES.servingCert, servingCertPem);
    await write(PKI_FILES.serviceAccountKey, await pkcs8Pem(saKeys.privateKey));
    await write(PKI_FILES.serviceAccountPublicKey, saPub);
    await write(PKI_FILES.adminToken, randomBytes(ADMIN_TOKEN_BYTES).toString('base64url') + '\n');
    await rename(tmp, pki);
  } catch (e) {
    await rm(tmp, { recursive: true, force: true });
    // Another process created pki/ first: load its credentials, never replace them.
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTEMPTY') return;
    if (e instanceof MeshError) throw e;
    fail(`cannot create credentials in ${pki}: ${(e as Error).message}`, e);
  }
}

async function pkcs8Pem(key: CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await subtle.exportKey('pkcs8', key), 'PRIVATE KEY') + '\n';
}

/** A serving certificate for `servingKeyPem`'s public key, signed by the cluster CA. */
async function issueServingCert(
  caCertPem: string,
  caKeyPem: string,
  servingKeyPem: string,
  sans: Sans,
): Promise<string> {
  const caCert = new x509.X509Certificate(caCertPem);
  const ecdsa = { name: 'ECDSA', namedCurve: 'P-256' } as const;
  const caKey = await subtle.importKey(
    'pkcs8',
    createPrivateKey(caKeyPem).export({ type: 'pkcs8', format: 'der' }),
    ecdsa,
    false,
    ['sign'],
  );
  const spki = createPublicKey(servingKeyPem).export({ type: 'spki', format: 'der' });
  const publicKey = await subtle.importKey('spki', spki, ecdsa, true, ['verify']);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: 'CN=kube-apiserver',
    issuer: exactSubjectName(caCert, PKI_FILES.caCert),
    notBefore: new Date(now - CLOCK_SKEW_GRACE_MS),
    notAfter: new Date(Math.min(now + SERVING_CERT_TTL_MS, caCert.notAfter.getTime())),
    publicKey,
    signingKey: caKey,
    signingAlgorithm: EC_P256,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      await x509.AuthorityKeyIdentifierExtension.create(caCert, false),
      new x509.SubjectAlternativeNameExtension([
        ...sans.dns.map((value) => ({ type: 'dns' as const, value })),
        ...sans.ips.map((value) => ({ type: 'ip' as const, value })),
      ]),
    ],
  });
  return cert.toString('pem') + '\n';
}

/** The SANs `pem` lacks of `want`. */
function missingSans(pem: string, want: Sans): string[] {
  const names = new x509.X509Certificate(pem).getExtension(x509.SubjectAlternativeNameExtension)?.names.items ?? [];
  const dns = new Set(names.filter((n) => n.type === 'dns').map((n) => n.value));
  const ips = new Set(names.filter((n) => n.type === 'ip').map((n) => canonicalIp(n.value)));
  return [...want.dns.filter((d) => !dns.has(d)), ...want.ips.filter((i) => !ips.has(i))];
}

async function loadPkiDir(
  pki: string,
  opts: ClusterCredentialsOptions,
): Promise<Omit<ClusterCredentials, 'kubeconfigPath'>> {
  const file = (f: string): string => path.join(pki, f);
  const read = async (f: string): Promise<string> =>
    readFile(file(f), 'utf8').catch((e: unknown) =>
      fail(
        `cannot read ${file(f)} (${(e as Error).message}); the cluster credentials in ${pki} are incomplete: restore the file, or move ${pki} away to create new ones`,
      ),
    );
  const [caCertPem, caKeyPem, servingCertPem0, servingKeyPem, saKeyPem, saPubPem, tokenText] = (await Promise.all(
    [
      PKI_FILES.caCert,
      PKI_FILES.caKey,
      PKI_FILES.servingCert,
      PKI_FILES.servingKey,
      PKI_FILES.serviceAccountKey,
      PKI_FILES.serviceAccountPublicKey,
      PKI_FILES.adminToken,
    ].map(read),
  )) as [string, string, string, string, string, string, string];

  const parseCert = (f: string, pem: string): X509Certificate => {
    try {
      return new X509Certificate(pem);
    } catch (e) {
      return fail(`${file(f)}: not a PEM certificate: ${(e as Error).message}`);
    }
  };
  const parseKey = (f: string, pem: string): ReturnType<typeof createPrivateKey> => {
    try {
      return createPrivateKey(pem);
    } catch (e) {
      return fail(`${file(f)}: not a PEM private key: ${(e as Error).message}`);
    }
  };
  const ca = parseCert(PKI_FILES.caCert, caCertPem);
  if (!ca.checkPrivateKey(parseKey(PKI_FILES.caKey, caKeyPem)))
    fail(`${file(PKI_FILES.caKey)} does not match ${file(PKI_FILES.caCert)}`);
  if (Date.now() > Date.parse(ca.validTo))
    fail(`${file(PKI_FILES.caCert)} expired on ${ca.validTo}; move ${pki} away to create a new cluster identity`);
  const servingKey = parseKey(PKI_FILES.servingKey, servingKeyPem);
  const serving = parseCert(PKI_FILES.servingCert, servingCertPem0);
  if (!serving.checkPrivateKey(servingKey))
    fail(`${file(PKI_FILES.servingKey)} does not match ${file(PKI_FILES.servingCert)}`);

  // Reissue the serving certificate (same key) when it is not signed by this CA, lacks an address clients use,
  // or is about to expire.
  const sans = requiredSans(opts);
  let servingCertPem = servingCertPem0;
  const stale =
    !(serving.checkIssued(ca) && serving.verify(ca.publicKey)) ||
    missingSans(servingCertPem0, sans).length > 0 ||
    Date.parse(serving.validTo) - Date.now() < SERVING_CERT_RENEW_BEFORE_MS;
  if (stale) {
    servingCertPem = await issueServingCert(caCertPem, caKeyPem, servingKeyPem, sans);
    await replaceFile(file(PKI_FILES.servingCert), servingCertPem);
  }

  const saPrivate = parseKey(PKI_FILES.serviceAccountKey, saKeyPem);
  const spki = createPublicKey(saPrivate).export({ type: 'spki', format: 'der' });
  let saPubDer: Buffer;
  try {
    saPubDer = createPublicKey(saPubPem).export({ type: 'spki', format: 'der' });
  } catch (e) {
    return fail(`${file(PKI_FILES.serviceAccountPublicKey)}: not a PEM public key: ${(e as Error).message}`);
  }
  if (!saPubDer.equals(spki))
    fail(`${file(PKI_FILES.serviceAccountPublicKey)} does not match ${file(PKI_FILES.serviceAccountKey)}`);
  const adminToken = tokenText.trim();
  if (Buffer.from(adminToken, 'base64url').length < ADMIN_TOKEN_BYTES || /[^A-Za-z0-9_-]/.test(adminToken)) {
    fail(`${file(PKI_FILES.adminToken)} does not hold a ${ADMIN_TOKEN_BYTES * 8}-bit base64url token`);
  }
  return {
    caCertPem,
    servingCertPem,
    servingKeyPem,
    serviceAccountKey: {
      privateKey: await importPKCS8(saKeyPem, SERVICE_ACCOUNT_ALG),
      publicKey: await importSPKI(saPubPem, SERVICE_ACCOUNT_ALG),
      keyId: createHash('sha256').update(spki).digest('base64url'),
      publicKeyPem: saPubPem,
    },
    adminToken,
    serverUrl: serverUrl(opts.listenHost, opts.listenPort),
  };
}

/** Writes `data` to `file` (0600) if its content differs, atomically (a reader sees the old or the new file). */
async function writeIfChanged(file: string, data: string): Promise<void> {
  const old = await readFile(file, 'utf8').catch(() => undefined);
  if (old !== data) await replaceFile(file, data);
}

async function replaceFile(file: string, data: string): Promise<void> {
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeNewPrivateFile(tmp, data);
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    fail(`cannot write ${file}: ${(e as Error).message}`, e);
  }
}
