/**
 * Request authentication for the embedded API server: `Authorization: Bearer <token>` only, with the admin token
 * or a service-account JWT. Follows k8s.io/apiserver pkg/authentication/request/bearertoken (header parsing, the
 * "invalid bearer token" default error), pkg/authentication/token/tokenfile with the audience-agnostic wrapper
 * (the admin token), and kubernetes pkg/serviceaccount/jwt.go and claims.go (issuer, signature, audiences, then
 * time and the service account, secret, pod and node the token names, with go-jose's one-minute leeway).
 *
 * The caller of `authenticate` only learns "unauthenticated" (the HTTP layer answers 401); the reason is logged
 * with APISERVER_ERR_AUTHENTICATION and the token's subject, never the token. `authenticateToken` returns the
 * reason as kube-apiserver words it, for TokenReview's `status.error`.
 */
import { timingSafeEqual } from 'node:crypto';
import { compactVerify } from 'jose';
import type { Logger } from '../../lib/log.js';
import { asRecord, isRecord } from '../../lib/record.js';
import type { KubeObject } from '../kube-object.js';
import { SERVICE_ACCOUNT_ALG, type ServiceAccountSigningKey } from './cluster-credentials.js';
import type { KubernetesClaim, ObjectLookups } from './service-account-token.js';
import { SYSTEM_AUTHENTICATED, SYSTEM_MASTERS, serviceAccountUser, type UserInfo } from './user-info.js';

/** The admin token's user: kubeadm's admin kubeconfig user, in the privileged group. */
export const ADMIN_USER: UserInfo = Object.freeze({
  username: 'kubernetes-admin',
  groups: Object.freeze([SYSTEM_MASTERS, SYSTEM_AUTHENTICATED]),
});

/** go-jose's jwt.DefaultLeeway, which Kubernetes validates `exp`, `nbf` and `iat` with. */
export const JWT_LEEWAY_SECONDS = 60;

/** bearertoken.go's error when no authenticator recognised the token. */
const INVALID_BEARER_TOKEN = 'invalid bearer token';

export interface AuthenticatorOptions {
  readonly adminToken: string;
  readonly key: ServiceAccountSigningKey;
  /** The one issuer whose tokens are accepted. */
  readonly issuer: string;
  /** `--api-audiences`: what a token must be for when the caller names no audiences. */
  readonly apiAudiences: readonly string[];
  readonly lookups: ObjectLookups;
  readonly log: Logger;
  /** Milliseconds since the epoch; tests move it. */
  readonly now?: () => number;
}

/** The outcome of one token, as TokenReview reports it. */
export type TokenAuthentication =
  | { readonly authenticated: true; readonly user: UserInfo; readonly audiences: readonly string[] }
  | { readonly authenticated: false; readonly error: string; readonly subject?: string };

class TokenRejected extends Error {}

const intersect = (a: readonly string[], b: readonly string[]): string[] => a.filter((x) => b.includes(x));
/** Go's %q of a []string: `["a" "b"]`. */
const goQuotedList = (l: readonly string[]): string => `[${l.map((s) => JSON.stringify(s)).join(' ')}]`;
const isRef = (v: unknown): v is { name?: unknown; uid?: unknown } => typeof v === 'object' && v !== null;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** A token's `aud` claim as a list: one string or an array of them (RFC 7519 section 4.1.3); anything else is none. */
function audienceClaim(aud: unknown): string[] {
  if (typeof aud === 'string') return [aud];
  if (Array.isArray(aud)) return aud.filter((a): a is string => typeof a === 'string');
  return [];
}

export class Authenticator {
  private readonly adminToken: Buffer;
  private readonly now: () => number;

  constructor(private readonly opts: AuthenticatorOptions) {
    this.adminToken = Buffer.from(opts.adminToken);
    this.now = opts.now ?? Date.now;
  }

  /** The user of a request's `Authorization` header value, or undefined (answer 401). */
  async authenticate(authorization: string | undefined): Promise<UserInfo | undefined> {
    const token = bearerToken(authorization);
    if (token === undefined) {
      this.opts.log.debug(
        { code: 'APISERVER_ERR_AUTHENTICATION' },
        'request without a bearer token is unauthenticated',
      );
      return undefined;
    }
    const r = await this.authenticateToken(token);
    if (r.authenticated) return r.user;
    this.opts.log.warn(
      {
        code: 'APISERVER_ERR_AUTHENTICATION',
        reason: r.error,
        ...(r.subject !== undefined ? { subject: r.subject } : {}),
      },
      'APISERVER_ERR_AUTHENTICATION: unable to authenticate the request',
    );
    return undefined;
  }

  /**
   * Authenticates `token` for `audiences` (default the API audiences): the user and the audiences it was accepted
   * for, or the error kube-apiserver would report.
   */
  async authenticateToken(token: string, audiences?: readonly string[]): Promise<TokenAuthentication> {
    const requested = audiences !== undefined && audiences.length > 0 ? audiences : this.opts.apiAudiences;
    if (this.isAdminToken(token)) {
      // The admin token is audience-agnostic: valid for the API audiences only (WrapAudienceAgnosticToken).
      const auds = intersect(this.opts.apiAudiences, requested);
      if (auds.length > 0) return { authenticated: true, user: ADMIN_USER, audiences: auds };
      return { authenticated: false, error: INVALID_BEARER_TOKEN };
    }
    const payload = this.claimsIfOurs(token);
    if (payload === undefined) return { authenticated: false, error: INVALID_BEARER_TOKEN };
    const subject = str(payload['sub']);
    try {
      const verified = await this.verifySignature(token);
      return { authenticated: true, ...(await this.validate(verified, requested)) };
    } catch (e) {
      if (!(e instanceof TokenRejected)) throw e;
      return { authenticated: false, error: `[${INVALID_BEARER_TOKEN}, ${e.message}]`, subject };
    }
  }

  private isAdminToken(token: string): boolean {
    const b = Buffer.from(token);
    return b.length === this.adminToken.length && timingSafeEqual(b, this.adminToken);
  }

  /** The unverified claims of a JWT from our issuer, else undefined: someone else's token (jwt.go hasCorrectIssuer). */
  private claimsIfOurs(token: string): Record<string, unknown> | undefined {
    const parts = token.split('.');
    if (parts.length !== 3) return undefined;
    try {
      const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as unknown;
      if (isRecord(claims) && claims['iss'] === this.opts.issuer) return claims;
    } catch {
      // Not JSON: not ours.
    }
    return undefined;
  }

  private async verifySignature(token: string): Promise<Record<string, unknown>> {
    try {
      const { payload } = await compactVerify(token, this.opts.key.publicKey, { algorithms: [SERVICE_ACCOUNT_ALG] });
      return JSON.parse(Buffer.from(payload).toString('utf8')) as Record<string, unknown>;
    } catch {
      throw new TokenRejected('go-jose/go-jose: error in cryptographic primitive');
    }
  }

  /** jwt.go after the signature: audiences, then claims.go's Validate. */
  private async validate(
    c: Record<string, unknown>,
    requested: readonly string[],
  ): Promise<{ user: UserInfo; audiences: string[] }> {
    const aud = c['aud'];
    const tokenAuds = audienceClaim(aud);
    const effective = tokenAuds.length > 0 ? tokenAuds : this.opts.apiAudiences;
    const auds = intersect(effective, requested);
    if (auds.length === 0)
      throw new TokenRejected(
        `token audiences ${goQuotedList(effective)} is invalid for the target audiences ${goQuotedList(requested)}`,
      );

    const now = Math.floor(this.now() / 1000);
    const num = (k: string): number | undefined => (typeof c[k] === 'number' ? c[k] : undefined);
    const exp = num('exp');
    const nbf = num('nbf');
    const iat = num('iat');
    if (exp !== undefined && now - JWT_LEEWAY_SECONDS > exp)
      throw new TokenRejected('service account token has expired');
    if (nbf !== undefined && now + JWT_LEEWAY_SECONDS < nbf)
      throw new TokenRejected('service account token is not valid yet');
    if (iat !== undefined && now + JWT_LEEWAY_SECONDS < iat)
      throw new TokenRejected('service account token claims could not be validated due to unexpected validation error');

    const k8s = asRecord(c['kubernetes.io']) as Partial<Record<keyof KubernetesClaim, unknown>>;
    const ref = (v: unknown): { name: string; uid: string } | undefined =>
      isRef(v) ? { name: str(v.name), uid: str(v.uid) } : undefined;
    const namespace = str(k8s.namespace);
    const saRef = ref(k8s.serviceaccount) ?? { name: '', uid: '' };
    const deletedBefore = this.now() - JWT_LEEWAY_SECONDS * 1000;
    const gone = (o: KubeObject): boolean =>
      o.metadata.deletionTimestamp !== undefined && Date.parse(o.metadata.deletionTimestamp) < deletedBefore;
    const l = this.opts.lookups;

    const sa = await l.getServiceAccount(namespace, saRef.name);
    if (sa === undefined) throw new TokenRejected(`serviceaccounts "${saRef.name}" not found`);
    if (gone(sa)) throw new TokenRejected(`service account ${namespace}/${saRef.name} has been deleted`);
    if ((sa.metadata.uid ?? '') !== saRef.uid)
      throw new TokenRejected(`service account UID (${sa.metadata.uid ?? ''}) does not match claim (${saRef.uid})`);

    const checkBound = async (
      what: string,
      r: { name: string; uid: string },
      get: () => Promise<KubeObject | undefined> | KubeObject | undefined,
    ): Promise<void> => {
      const o = await get();
      if (o === undefined || gone(o)) throw new TokenRejected('service account token has been invalidated');
      if ((o.metadata.uid ?? '') !== r.uid)
        throw new TokenRejected(
          `${what} UID (${o.metadata.uid ?? ''}) does not match service account ${what} ref claim (${r.uid})`,
        );
    };
    const secretRef = ref(k8s.secret);
    if (secretRef !== undefined) await checkBound('secret', secretRef, () => l.getSecret(namespace, secretRef.name));
    const podRef = ref(k8s.pod);
    if (podRef !== undefined) await checkBound('pod', podRef, () => l.getPod(namespace, podRef.name));
    const nodeRef = ref(k8s.node);
    // A pod-bound token carries its node as information; only a node-bound token is checked against the node.
    if (nodeRef !== undefined && podRef === undefined) await checkBound('node', nodeRef, () => l.getNode(nodeRef.name));

    const jti = str(c['jti']);
    const user = serviceAccountUser({
      namespace,
      name: saRef.name,
      uid: saRef.uid,
      podName: podRef?.name,
      podUid: podRef?.uid,
      nodeName: nodeRef?.name,
      nodeUid: nodeRef?.uid,
      tokenId: jti === '' ? undefined : jti,
    });
    return { user, audiences: auds };
  }
}

/** The token of `Bearer <token>` (case-insensitive scheme), else undefined: bearertoken.go. */
export function bearerToken(authorization: string | undefined): string | undefined {
  const auth = (authorization ?? '').trim();
  if (auth === '') return undefined;
  const parts = auth.split(' ');
  if (parts.length < 2 || parts[0]!.toLowerCase() !== 'bearer' || parts[1] === '') return undefined;
  return parts[1];
}
