import { ipBytes, cidrContains, type Cidr } from '../lib/ip.js';
import { identityToString, type Identity } from '../lib/spiffe.js';
import {
  policyKey,
  type Authorization,
  type RbacMatch,
  type StringMatch,
  type ServiceAccountMatch,
} from './state/policy.js';

/** The attributes L4 authorization sees (ztunnel `src/rbac.rs`). `dstPort` is the application port, after port mapping. */
export interface RbacConnection {
  readonly srcIp: string;
  readonly dstIp: string;
  readonly dstPort: number;
  /** The peer's SPIFFE identity; undefined for plaintext. */
  readonly srcIdentity: Identity | undefined;
}

export type RbacDecision =
  | { readonly allowed: true; readonly dryRunNotes: readonly string[] }
  | {
      readonly allowed: false;
      readonly reason: string;
      readonly policy: string | undefined;
      readonly dryRunNotes: readonly string[];
    };

function stringMatches(m: StringMatch, v: string): boolean {
  if ('Exact' in m) return v === m.Exact;
  if ('Prefix' in m) return v.startsWith(m.Prefix);
  if ('Suffix' in m) return v.endsWith(m.Suffix);
  return v !== '';
}

/** Principals are matched without the `spiffe://` prefix; no identity never matches. */
function principalMatches(m: StringMatch, id: Identity | undefined): boolean {
  if (id === undefined) return false;
  return stringMatches(m, identityToString(id).slice('spiffe://'.length));
}

function saMatches(m: ServiceAccountMatch, id: Identity | undefined): boolean {
  return id !== undefined && id.namespace === m.namespace && id.serviceAccount === m.serviceAccount;
}

function cidrMatches(c: Cidr, ip: Buffer | undefined): boolean {
  return ip !== undefined && cidrContains(c, ip);
}

/** A field group matches when its positive list (if any) has a hit and its negative list (if any) has none. */
function group<T>(pos: readonly T[], neg: readonly T[], hit: (x: T) => boolean): boolean {
  if (pos.length > 0 && !pos.some(hit)) return false;
  if (neg.length > 0 && neg.some(hit)) return false;
  return true;
}

export function isEmptyMatch(m: RbacMatch): boolean {
  return (
    m.namespaces.length +
      m.notNamespaces.length +
      m.serviceAccounts.length +
      m.notServiceAccounts.length +
      m.principals.length +
      m.notPrincipals.length +
      m.sourceIps.length +
      m.notSourceIps.length +
      m.destinationIps.length +
      m.notDestinationIps.length +
      m.destinationPorts.length +
      m.notDestinationPorts.length ===
    0
  );
}

function matchMatches(m: RbacMatch, c: RbacConnection, src: Buffer | undefined, dst: Buffer | undefined): boolean {
  const ns = c.srcIdentity?.namespace ?? '';
  return (
    group(m.namespaces, m.notNamespaces, (x) => stringMatches(x, ns)) &&
    group(m.serviceAccounts, m.notServiceAccounts, (x) => saMatches(x, c.srcIdentity)) &&
    group(m.principals, m.notPrincipals, (x) => principalMatches(x, c.srcIdentity)) &&
    group(m.sourceIps, m.notSourceIps, (x) => cidrMatches(x, src)) &&
    group(m.destinationIps, m.notDestinationIps, (x) => cidrMatches(x, dst)) &&
    group(m.destinationPorts, m.notDestinationPorts, (p) => p === c.dstPort)
  );
}

/**
 * Policy matches iff any rule matches; a rule iff all its clauses match (no clauses: matches); a clause iff any of
 * its non-empty matches matches (an empty list of matches counts as matched; an empty Match is skipped).
 */
export function policyMatches(p: Authorization, c: RbacConnection): boolean {
  const src = ipBytes(c.srcIp);
  const dst = ipBytes(c.dstIp);
  return p.rules.some((rule) =>
    rule.every((clause) => clause.length === 0 || clause.some((m) => !isEmptyMatch(m) && matchMatches(m, c, src, dst))),
  );
}

/**
 * ztunnel's evaluation order (ztunnel `src/rbac.rs`): dry-run DENY (log), enforced DENY, dry-run ALLOW (log), no enforced
 * ALLOW → allow, any ALLOW matches → allow, else deny. Before all of it, a policy that could not be accepted
 * denies (fail closed; see `failClosedPolicy`).
 */
export function evaluate(policies: readonly Authorization[], c: RbacConnection): RbacDecision {
  const notes: string[] = [];
  for (const p of policies)
    if (p.rejected !== undefined && p.dryRun)
      notes.push(`dry-run: policy ${policyKey(p)} could not be accepted (${p.rejected})`);
  const broken = policies.find((p) => p.rejected !== undefined && !p.dryRun);
  if (broken !== undefined) {
    return {
      allowed: false,
      reason: `policy ${policyKey(broken)} could not be accepted (${broken.rejected ?? ''}); denying what it covers`,
      policy: policyKey(broken),
      dryRunNotes: notes,
    };
  }
  for (const p of policies) {
    if (p.action === 'Deny' && p.dryRun && policyMatches(p, c))
      notes.push(`dry-run: would be denied by ${policyKey(p)}`);
  }
  for (const p of policies) {
    if (p.action === 'Deny' && !p.dryRun && policyMatches(p, c)) {
      return {
        allowed: false,
        reason: `explicitly denied by: ${policyKey(p)}`,
        policy: policyKey(p),
        dryRunNotes: notes,
      };
    }
  }
  const allows = policies.filter((p) => p.action === 'Allow');
  const dryAllows = allows.filter((p) => p.dryRun);
  if (dryAllows.length > 0) {
    const hit = dryAllows.find((p) => policyMatches(p, c));
    notes.push(
      hit === undefined
        ? 'dry-run: allow policies exist, none would allow'
        : `dry-run: would be allowed by ${policyKey(hit)}`,
    );
  }
  const enforced = allows.filter((p) => !p.dryRun);
  if (enforced.length === 0) return { allowed: true, dryRunNotes: notes };
  if (enforced.some((p) => policyMatches(p, c))) return { allowed: true, dryRunNotes: notes };
  return { allowed: false, reason: 'allow policies exist, but none allowed', policy: undefined, dryRunNotes: notes };
}
