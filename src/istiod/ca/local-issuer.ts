import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  SignJWT,
  exportPKCS8,
  generateKeyPair,
  importPKCS8,
  exportJWK,
  type JWK,
  type CryptoKey as JoseKey,
} from 'jose';
import { MeshError } from '../../lib/errors.js';
import { ensurePrivateDir, writeNewPrivateFile } from '../../lib/pki/private-files.js';

/** The `iss` of tokens minted by `amesh istiod token`. */
export const LOCAL_ISSUER = 'amesh-istiod-local';
const ALG = 'ES256';
const KEY_FILE = 'token-issuer-key.pem';
/** Projected ztunnel tokens live 12h (Istio's chart: expirationSeconds 43200). */
export const DEFAULT_TOKEN_TTL_SECONDS = 43_200;

export interface TokenRequest {
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly audience: string;
  readonly node?: string | undefined;
  readonly pod?: string | undefined;
  readonly ttlSeconds?: number | undefined;
}

/**
 * istiod's own token issuer for local components, shaped like Kubernetes projected service-account tokens
 * (`sub: system:serviceaccount:<ns>:<sa>`, `kubernetes.io` claims with namespace, service account, pod, node).
 * Its ES256 key is kept in the state directory so tokens survive restarts.
 */
export class LocalIssuer {
  private constructor(
    private readonly privateKey: JoseKey,
    readonly publicJwk: JWK,
  ) {}

  /** Loads the key from `stateDir` (which must be private to istiod, see `ensurePrivateDir`), or creates it. */
  static async loadOrCreate(stateDir: string): Promise<LocalIssuer> {
    await ensurePrivateDir(stateDir, 'ISTIOD_ERR_STATE', 'istiod state directory');
    const file = path.join(stateDir, KEY_FILE);
    let pem: string;
    try {
      pem = await readFile(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
        throw new MeshError('ISTIOD_ERR_STATE', `cannot read ${file}: ${(e as Error).message}`);
      const { privateKey } = await generateKeyPair(ALG, { extractable: true });
      pem = await exportPKCS8(privateKey);
      try {
        await writeNewPrivateFile(file, pem);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') pem = await readFile(file, 'utf8');
        else throw new MeshError('ISTIOD_ERR_STATE', `cannot write ${file}: ${(err as Error).message}`);
      }
    }
    const privateKey = await importPKCS8(pem, ALG, { extractable: true });
    const jwk = await exportJWK(privateKey);
    // The public half only: drop the private scalar.
    const publicJwk: JWK = { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, alg: ALG, use: 'sig' };
    return new LocalIssuer(privateKey, publicJwk);
  }

  async issue(r: TokenRequest): Promise<string> {
    const k8s: Record<string, unknown> = {
      namespace: r.namespace,
      serviceaccount: { name: r.serviceAccount, uid: randomUUID() },
    };
    if (r.pod !== undefined) k8s['pod'] = { name: r.pod, uid: randomUUID() };
    if (r.node !== undefined) k8s['node'] = { name: r.node, uid: randomUUID() };
    return new SignJWT({ 'kubernetes.io': k8s })
      .setProtectedHeader({ alg: ALG })
      .setIssuer(LOCAL_ISSUER)
      .setSubject(`system:serviceaccount:${r.namespace}:${r.serviceAccount}`)
      .setAudience(r.audience)
      .setIssuedAt()
      .setNotBefore('0s')
      .setExpirationTime(`${r.ttlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS}s`)
      .sign(this.privateKey);
  }
}
