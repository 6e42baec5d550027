import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  jwtVerify,
  errors as joseErrors,
  type JWK,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { MeshError, describeError, isMeshError } from '../../lib/errors.js';
import { LOCAL_ISSUER } from './local-issuer.js';

/** Istio's JwtRule (the `JWT_RULE` env): an issuer and where its keys are. */
export interface JwtRule {
  readonly issuer: string;
  readonly audiences?: readonly string[];
  /** Inline JWKS, as a JSON string (Istio's `jwks`). */
  readonly jwks?: string;
  readonly jwksUri?: string;
}

/** Who called the CA, from the token's Kubernetes service-account claims or the API's TokenReview of it. */
export interface Caller {
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly node: string | undefined;
  /** The pod the token names: a claim of a JWT verified here, or the pod the API's TokenReview bound it to. */
  readonly pod: string | undefined;
  /** The bound pod's UID, only from a TokenReview: what node authorization against the API requires. */
  readonly podUid: string | undefined;
  /** The token's `iss` when verified here; the API server's URL when the API reviewed it. */
  readonly issuer: string;
}

/** Authenticates a gRPC caller from its `authorization` and `clusterid` metadata (istio `pkg/security` Authenticator). */
export interface CallerAuthenticator {
  authenticate(authorization: string | undefined, clusterId?: string): Promise<Caller>;
}

const FAILURE_PREFIX = 'request authenticate failure: ';

/** Throws the opaque-to-the-caller authentication failure, with `why` for istiod's log. */
export function authenticationFailure(why: string): never {
  throw new MeshError('ISTIOD_ERR_AUTHENTICATION', `${FAILURE_PREFIX}${why}`);
}

/** Why an authenticator refused: the `why` of an authentication failure, else the error itself. */
export function authenticationReason(e: unknown): string {
  return isMeshError(e, 'ISTIOD_ERR_AUTHENTICATION') && e.message.startsWith(FAILURE_PREFIX)
    ? e.message.slice(FAILURE_PREFIX.length)
    : describeError(e);
}

/** The token of `authorization: Bearer <token>` metadata (istio `pkg/security/security.go` ExtractBearerToken). */
export function bearerTokenOf(authorization: string | undefined): string {
  if (authorization === undefined || authorization === '')
    return authenticationFailure('no "authorization: Bearer <token>" metadata');
  const m = /^Bearer\s+(\S+)$/i.exec(authorization);
  if (m === null) return authenticationFailure('authorization metadata is not "Bearer <token>"');
  return m[1]!;
}

interface Issuer {
  readonly keys: JWTVerifyGetKey;
  readonly audiences: readonly string[];
}

const SUB_RE = /^system:serviceaccount:([^:]+):([^:]+)$/;

/** Parses `JWT_RULE`: one JwtRule object or a list of them. */
export function parseJwtRules(env: string | undefined): JwtRule[] {
  if (env === undefined || env.trim() === '') return [];
  let v: unknown;
  try {
    v = JSON.parse(env);
  } catch (e) {
    throw new MeshError('AMESH_ERR_CONFIG', `JWT_RULE is not JSON: ${(e as Error).message}`);
  }
  const list = Array.isArray(v) ? v : [v];
  return list.map((r, i) => {
    const o = r as Partial<JwtRule>;
    if (typeof o.issuer !== 'string' || o.issuer === '')
      throw new MeshError('AMESH_ERR_CONFIG', `JWT_RULE[${i}]: "issuer" is required`);
    if (o.jwks === undefined && o.jwksUri === undefined)
      throw new MeshError('AMESH_ERR_CONFIG', `JWT_RULE[${i}] (${o.issuer}): give "jwks" (inline JSON) or "jwksUri"`);
    return {
      issuer: o.issuer,
      audiences: o.audiences ?? [],
      ...(o.jwks !== undefined ? { jwks: o.jwks } : {}),
      ...(o.jwksUri !== undefined ? { jwksUri: o.jwksUri } : {}),
    };
  });
}

/**
 * Authenticates CA and xDS callers by `authorization: Bearer <JWT>` (istio `security/pkg/server/ca/authenticate/oidc.go`): the issuer must be trusted
 * (istiod's local issuer, when there is one, or a JWT_RULE), the signature valid, the token current, the audience
 * one of ours, and the subject a Kubernetes service account.
 */
export class Authenticator implements CallerAuthenticator {
  private readonly issuers = new Map<string, Issuer>();

  constructor(
    rules: readonly JwtRule[],
    localJwk: JWK | undefined,
    private readonly audiences: readonly string[],
  ) {
    if (localJwk !== undefined)
      this.issuers.set(LOCAL_ISSUER, { keys: createLocalJWKSet({ keys: [localJwk] }), audiences: [] });
    for (const r of rules) {
      const keys =
        r.jwks !== undefined
          ? createLocalJWKSet(JSON.parse(r.jwks) as { keys: JWK[] })
          : createRemoteJWKSet(new URL(r.jwksUri!));
      this.issuers.set(r.issuer, { keys, audiences: r.audiences ?? [] });
    }
  }

  async authenticate(authorization: string | undefined): Promise<Caller> {
    const fail = authenticationFailure;
    const token = bearerTokenOf(authorization);
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(token);
    } catch {
      return fail('the bearer token is not a JWT');
    }
    const iss = unverified.iss ?? '';
    const issuer = this.issuers.get(iss);
    if (issuer === undefined)
      return fail(`unknown issuer "${iss}" (trusted: ${[...this.issuers.keys()].join(', ')}; add it with JWT_RULE)`);
    const audiences = issuer.audiences.length > 0 ? issuer.audiences : this.audiences;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, issuer.keys, {
        issuer: iss,
        audience: [...audiences],
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) return fail('the token has expired');
      if (e instanceof joseErrors.JWTClaimValidationFailed && e.claim === 'aud')
        return fail(`the token's audience ${JSON.stringify(unverified.aud)} is not one of ${audiences.join(', ')}`);
      return fail(describeError(e));
    }
    const sub = SUB_RE.exec(payload.sub ?? '');
    if (sub === null) return fail(`subject "${payload.sub ?? ''}" is not system:serviceaccount:<namespace>:<name>`);
    const k8s = (payload['kubernetes.io'] ?? {}) as { node?: { name?: string }; pod?: { name?: string } };
    return {
      namespace: sub[1]!,
      serviceAccount: sub[2]!,
      node: k8s.node?.name,
      pod: k8s.pod?.name,
      podUid: undefined,
      issuer: iss,
    };
  }
}
