/**
 * The waypoint's RequestAuthentication: JWTs checked as Envoy's jwt_authn checks them in the providers Istio builds
 * (istio `pilot/pkg/security/authn/policy_applier.go`: one provider per jwtRule, required "any of them, or none").
 * A request without a token passes with no request principal (an AuthorizationPolicy decides whether that is
 * enough); a token that fails (bad signature, expired, not yet valid, wrong audience, an issuer no rule names, keys
 * that cannot be had) gets 401 with Envoy's words. A verified token gives `request.auth.*` to the policies and, as
 * configured, leaves the forwarded request, or has its payload or claims copied into headers.
 *
 * Keys: inline from istiod, or fetched by the waypoint from `jwksUri` and cached (jose's remote key set: refreshed
 * after ten minutes, at most once per thirty seconds for an unknown key id), as Envoy does with remote JWKS.
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import type { RequestAuthentication } from '../api/amesh/waypoint/v1/waypoint_pb.js';
import type { HeaderEdits } from './route-table.js';

/** What the policies see of a verified token (`request.auth.*`). */
export interface VerifiedJwt {
  readonly principal: string;
  readonly audiences: readonly string[];
  readonly presenter: string | undefined;
  readonly claims: Readonly<Record<string, unknown>>;
}

interface Rule {
  readonly issuer: string;
  readonly audiences: readonly string[];
  readonly keys: JWTVerifyGetKey;
  readonly fromHeaders: readonly { readonly name: string; readonly prefix: string }[];
  readonly fromParams: readonly string[];
  readonly fromCookies: readonly string[];
  readonly forward: boolean;
  readonly payloadHeader: string;
  readonly claimHeaders: readonly { readonly header: string; readonly claim: string }[];
}
export interface JwtPolicy {
  readonly name: string;
  readonly services: readonly string[];
  readonly rules: readonly Rule[];
}

/** Where a token was found, so that it can be taken out of the forwarded request. */
type Location = { readonly header: string } | { readonly param: string } | { readonly cookie: string };

export type JwtOutcome =
  | {
      readonly ok: true;
      readonly jwt: VerifiedJwt | undefined;
      /** The forwarded request's header edits and target, as the rule that verified the token has them. */
      readonly headers: HeaderEdits | undefined;
      readonly url: string;
    }
  | { readonly ok: false; readonly body: string; readonly reason: string };

const NO_KEYS: JWTVerifyGetKey = createLocalJWKSet({ keys: [] });
/** Envoy's jwt_authn allows this much clock skew. */
const CLOCK_SKEW_SECONDS = 60;

/** Converts istiod's RequestAuthentications; `remote` gives the (shared, cached) key set of a `jwks_uri`. */
export function jwtPoliciesFromXds(
  ras: readonly RequestAuthentication[],
  remote: (uri: string) => JWTVerifyGetKey,
): { policies: readonly JwtPolicy[]; rejected: string[] } {
  const rejected: string[] = [];
  const policies = ras.map((ra) =>
    Object.freeze({
      name: ra.name,
      services: [...ra.services],
      rules: ra.rules.map((r): Rule => {
        let keys = NO_KEYS;
        if (r.jwks !== '') {
          try {
            keys = createLocalJWKSet(JSON.parse(r.jwks) as JSONWebKeySet);
          } catch (e) {
            rejected.push(`${ra.name}: jwks for ${r.issuer}: ${(e as Error).message}; its tokens are refused`);
          }
        } else if (r.jwksUri !== '') {
          try {
            keys = remote(new URL(r.jwksUri).href);
          } catch (e) {
            rejected.push(`${ra.name}: jwksUri for ${r.issuer}: ${(e as Error).message}; its tokens are refused`);
          }
        }
        return Object.freeze({
          issuer: r.issuer,
          audiences: [...r.audiences],
          keys,
          fromHeaders: r.fromHeaders.map((h) => ({ name: h.name.toLowerCase(), prefix: h.prefix })),
          fromParams: [...r.fromParams],
          fromCookies: [...r.fromCookies],
          forward: r.forwardOriginalToken,
          payloadHeader: r.outputPayloadToHeader.toLowerCase(),
          claimHeaders: r.outputClaimToHeaders.map((c) => ({ header: c.header.toLowerCase(), claim: c.claim })),
        });
      }),
    }),
  );
  return { policies, rejected };
}

/** A cache of remote key sets by URI, shared across config pushes so a push does not refetch every key set. */
export function remoteKeySets(): (uri: string) => JWTVerifyGetKey {
  const sets = new Map<string, JWTVerifyGetKey>();
  return (uri) => {
    let s = sets.get(uri);
    if (s === undefined) {
      s = createRemoteJWKSet(new URL(uri), { cacheMaxAge: 600_000, cooldownDuration: 30_000, timeoutDuration: 5000 });
      sets.set(uri, s);
    }
    return s;
  };
}

function header(headers: Readonly<Record<string, string | string[] | undefined>>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The tokens a rule finds in a request, with where each was. */
function tokensFor(
  r: Rule,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  query: URLSearchParams,
): { token: string; at: Location }[] {
  const out: { token: string; at: Location }[] = [];
  const defaults = r.fromHeaders.length + r.fromParams.length + r.fromCookies.length === 0;
  const fromHeaders = defaults ? [{ name: 'authorization', prefix: 'Bearer ' }] : r.fromHeaders;
  for (const h of fromHeaders) {
    const v = header(headers, h.name);
    if (v === undefined || !v.startsWith(h.prefix)) continue;
    const token = v.slice(h.prefix.length).trim();
    if (token !== '') out.push({ token, at: { header: h.name } });
  }
  for (const p of defaults ? ['access_token'] : r.fromParams) {
    const token = query.get(p);
    if (token !== null && token !== '') out.push({ token, at: { param: p } });
  }
  const cookies = header(headers, 'cookie');
  if (cookies !== undefined)
    for (const c of r.fromCookies)
      for (const part of cookies.split(';')) {
        const [k, ...v] = part.trim().split('=');
        if (k === c && v.length > 0) out.push({ token: v.join('='), at: { cookie: c } });
      }
  return out;
}

/** Envoy's words for why a token failed (its jwt_authn `Status` strings). */
function failure(e: unknown): string {
  if (e instanceof errors.JWTExpired) return 'Jwt is expired';
  if (e instanceof errors.JWTClaimValidationFailed) {
    if (e.claim === 'nbf') return 'Jwt not yet valid';
    if (e.claim === 'aud') return 'Audiences in Jwt are not allowed';
    if (e.claim === 'iss') return 'Jwt issuer is not configured';
    return 'Jwt verification fails';
  }
  if (e instanceof errors.JWSInvalid || e instanceof errors.JWTInvalid)
    return 'Jwt is not in the form of Header.Payload.Signature with two dots and 3 sections';
  if (e instanceof errors.JWKSTimeout || (e instanceof errors.JOSEError && e.code === 'ERR_JOSE_GENERIC'))
    return 'Jwks remote fetch is failed';
  return 'Jwt verification fails';
}

function claimString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

/** The request target without the query parameter `param`. */
function withoutParam(url: string, param: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  params.delete(param);
  const rest = params.toString();
  return rest === '' ? url.slice(0, q) : `${url.slice(0, q)}?${rest}`;
}

/**
 * Checks the request's token against the RequestAuthentications that cover `service` (their `services` is empty
 * or names it). Tokens are matched to rules by issuer; the first one found is the one checked, as Envoy does.
 */
export async function authenticateRequest(
  policies: readonly JwtPolicy[],
  service: string | undefined,
  req: { readonly url: string; readonly headers: Readonly<Record<string, string | string[] | undefined>> },
): Promise<JwtOutcome> {
  const rules = policies
    .filter((p) => p.services.length === 0 || (service !== undefined && p.services.includes(service)))
    .flatMap((p) => p.rules);
  if (rules.length === 0) return { ok: true, jwt: undefined, headers: undefined, url: req.url };
  const q = req.url.indexOf('?');
  const query = new URLSearchParams(q < 0 ? '' : req.url.slice(q + 1));
  const found = rules.flatMap((rule) => tokensFor(rule, req.headers, query).map((t) => ({ rule, ...t })));
  if (found.length === 0) return { ok: true, jwt: undefined, headers: undefined, url: req.url };
  const first = found[0]!;
  let issuer: string | undefined;
  try {
    issuer = decodeJwt(first.token).iss;
  } catch (e) {
    return { ok: false, body: failure(e), reason: `token is malformed: ${(e as Error).message}` };
  }
  const candidate = found.find((f) => f.token === first.token && f.rule.issuer === issuer);
  if (candidate === undefined)
    return {
      ok: false,
      body: 'Jwt issuer is not configured',
      reason: `no jwtRule for issuer ${JSON.stringify(issuer ?? '')}`,
    };
  const { rule, token, at } = candidate;
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, rule.keys, {
      issuer: rule.issuer,
      ...(rule.audiences.length > 0 ? { audience: [...rule.audiences] } : {}),
      clockTolerance: CLOCK_SKEW_SECONDS,
    }));
  } catch (e) {
    return { ok: false, body: failure(e), reason: `issuer ${rule.issuer}: ${(e as Error).message}` };
  }
  const aud = payload.aud;
  const jwt: VerifiedJwt = {
    principal: `${payload.iss ?? ''}/${payload.sub ?? ''}`,
    audiences: typeof aud === 'string' ? [aud] : (aud ?? []),
    presenter: typeof payload['azp'] === 'string' ? payload['azp'] : undefined,
    claims: payload,
  };
  const set: (readonly [string, string])[] = [];
  if (rule.payloadHeader !== '') set.push([rule.payloadHeader, token.split('.')[1] ?? '']);
  for (const c of rule.claimHeaders) {
    const v = claimString(payload[c.claim]);
    if (v !== undefined) set.push([c.header, v]);
  }
  const remove = !rule.forward && 'header' in at ? [at.header] : [];
  const url = !rule.forward && 'param' in at ? withoutParam(req.url, at.param) : req.url;
  return { ok: true, jwt, headers: { set, add: [], remove }, url };
}
