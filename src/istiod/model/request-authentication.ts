/**
 * RequestAuthentications with `targetRefs` → the JWT rules a waypoint checks (istio
 * `pilot/pkg/security/authn/policy_applier.go` builds Envoy's jwt_authn providers from the same fields): the issuer,
 * audiences, keys inline (`jwks`) or by `jwksUri`, where the token is looked for, whether it is forwarded, and the
 * payload or claims copied to headers. A rule whose keys cannot be used (inline `jwks` that is not a JSON Web Key
 * Set, neither `jwks` nor `jwksUri`) is kept with no keys, so a token from its issuer is refused rather than the rule
 * dropped: Istio does the same with its placeholder key set.
 */
import type { ResourceOf } from '../registry/manifest-dir.js';
import type { JwtRuleSpec } from '../registry/manifest-schema.js';

export interface JwtRuleModel {
  readonly issuer: string;
  readonly audiences: readonly string[];
  readonly jwks: string;
  readonly jwksUri: string;
  readonly fromHeaders: readonly { readonly name: string; readonly prefix: string }[];
  readonly fromParams: readonly string[];
  readonly fromCookies: readonly string[];
  readonly forwardOriginalToken: boolean;
  readonly outputPayloadToHeader: string;
  readonly outputClaimToHeaders: readonly { readonly header: string; readonly claim: string }[];
}
export interface RequestAuthenticationModel {
  readonly name: string;
  /** `namespace/hostname` of the targeted Services; empty: every request the waypoint serves. */
  readonly services: readonly string[];
  readonly rules: readonly JwtRuleModel[];
}

const present = <T>(v: readonly (T | null)[] | null | undefined): T[] =>
  (v ?? []).flatMap((x) => (x === null ? [] : [x]));

/** Whether `s` is a JSON Web Key Set: an object whose `keys` is a list of objects. */
function isJwks(s: string): boolean {
  try {
    const v = JSON.parse(s) as { keys?: unknown };
    return Array.isArray(v.keys) && v.keys.every((k) => typeof k === 'object' && k !== null);
  } catch {
    return false;
  }
}

function convertRule(r: JwtRuleSpec, where: string, warnings: string[]): JwtRuleModel | undefined {
  const issuer = r.issuer ?? '';
  if (issuer === '') {
    warnings.push(`${where}: a jwtRule without an issuer is ignored`);
    return undefined;
  }
  let jwks = r.jwks ?? '';
  const jwksUri = jwks === '' ? (r.jwksUri ?? '') : '';
  if (jwks !== '' && !isJwks(jwks)) {
    warnings.push(`${where}: jwks for ${issuer} is not a JSON Web Key Set; its tokens are refused`);
    jwks = '{"keys":[]}';
  } else if (jwks === '' && jwksUri === '') {
    warnings.push(`${where}: neither jwks nor jwksUri for ${issuer}; its tokens are refused`);
    jwks = '{"keys":[]}';
  }
  return {
    issuer,
    audiences: present(r.audiences),
    jwks,
    jwksUri,
    fromHeaders: present(r.fromHeaders).map((h) => ({ name: (h.name ?? '').toLowerCase(), prefix: h.prefix ?? '' })),
    fromParams: present(r.fromParams),
    fromCookies: present(r.fromCookies),
    forwardOriginalToken: r.forwardOriginalToken ?? false,
    outputPayloadToHeader: (r.outputPayloadToHeader ?? '').toLowerCase(),
    outputClaimToHeaders: present(r.outputClaimToHeaders).map((c) => ({
      header: (c.header ?? '').toLowerCase(),
      claim: c.claim ?? '',
    })),
  };
}

/** One targeted RequestAuthentication, with `services` left for the caller to fill. */
export function convertRequestAuthentication(ra: ResourceOf<'RequestAuthentication'>): {
  model: Omit<RequestAuthenticationModel, 'services'>;
  warnings: string[];
} {
  const name = `${ra.metadata.namespace}/${ra.metadata.name}`;
  const warnings: string[] = [];
  const rules = present(ra.spec.jwtRules).flatMap((r, i) => convertRule(r, `${name} jwtRules[${i}]`, warnings) ?? []);
  return { model: { name, rules }, warnings };
}
