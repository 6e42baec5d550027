import { ipBytes } from '../../lib/ip.js';
import {
  isPolicyIp,
  isPolicyPort,
  type PolicyCondition,
  type PolicyOperation,
  type PolicySource,
} from '../registry/manifest-schema.js';
import type { ResourceOf } from '../registry/manifest-dir.js';
import {
  AuthzAction,
  AuthzScope,
  emptyMatch,
  type AuthorizationModel,
  type IpMatchModel,
  type MatchModel,
  type StringMatchModel,
} from './types.js';

export interface ConvertResult {
  /** Undefined when the policy is not for ztunnel (waypoint-targeted, AUDIT/CUSTOM, dry-run). */
  readonly policy: AuthorizationModel | undefined;
  /** Status-style notes: why something was skipped or narrowed. */
  readonly warnings: readonly string[];
}

/** A policy's list of strings as Istio reads it; a null item reads as "null". */
type Strings = readonly (string | null)[] | null | undefined;

const strs = (v: Strings): string[] => v?.map(String) ?? [];
/** A field is set when it is a non-empty list, or anything but absent (an explicit null included). */
const isSet = (v: unknown): boolean => (Array.isArray(v) ? v.length > 0 : v !== undefined);

/** Istio's string patterns: `*` presence, `*x` suffix, `x*` prefix, else exact. */
export function stringMatch(s: string): StringMatchModel {
  if (s === '*') return { presence: true };
  if (s.startsWith('*')) return { suffix: s.slice(1) };
  if (s.endsWith('*')) return { prefix: s.slice(0, -1) };
  return { exact: s };
}

/** `a.b.c.d` → /32 (/128 for v6); CIDRs kept. Undefined when not an IP. */
export function ipMatch(s: string): IpMatchModel | undefined {
  const [ip = '', len] = s.split('/');
  const b = ipBytes(ip);
  if (b === undefined) return undefined;
  const max = b.length * 8;
  const length = len === undefined ? max : Number(len);
  if (!Number.isInteger(length) || length < 0 || length > max) return undefined;
  return { address: new Uint8Array(b), length };
}

/**
 * The values of a port or IP list that Istio keeps (`stringToPort`, `stringToIP`: invalid ones are skipped).
 * `never` is set when the list had values and none survived: as written it matched nothing, so the Match
 * holding it can never match (sending the emptied list would instead mean "any").
 */
function valid<T>(v: Strings, ok: (s: string) => boolean, parse: (s: string) => T): { values: T[]; never: boolean } {
  const all = strs(v);
  const values = all.filter(ok).map(parse);
  return { values, never: all.length > 0 && values.length === 0 };
}
const portValues = (v: Strings): { values: number[]; never: boolean } => valid(v, isPolicyPort, Number);
const ipValues = (v: Strings): { values: IpMatchModel[]; never: boolean } =>
  valid(
    v,
    (s) => isPolicyIp(s) && ipMatch(s) !== undefined,
    (s) => ipMatch(s)!,
  );

const L7_OPERATION = ['hosts', 'notHosts', 'methods', 'notMethods', 'paths', 'notPaths'] as const;
const L7_SOURCE = ['remoteIpBlocks', 'notRemoteIpBlocks', 'requestPrincipals', 'notRequestPrincipals'] as const;

/** Whom a policy applies to: the pods its selector picks, else the mesh (root namespace), else its own namespace. */
function policyScope(
  selector: Readonly<Record<string, string>>,
  namespace: string,
  rootNamespace: string,
): AuthorizationModel['scope'] {
  if (Object.keys(selector).length > 0) return AuthzScope.WORKLOAD_SELECTOR;
  return namespace === rootNamespace ? AuthzScope.GLOBAL : AuthzScope.NAMESPACE;
}

/**
 * One AuthorizationPolicy (security.istio.io/v1) → the L4 Authorization ztunnel enforces (istio `pilot/pkg/serviceregistry/ambient/authorization.go`).
 * L7-only attributes make an ALLOW rule disappear (more restrictive) and are left out of a DENY rule.
 */
export function convertAuthorizationPolicy(
  ap: ResourceOf<'AuthorizationPolicy'>,
  rootNamespace: string,
): ConvertResult {
  const spec = ap.spec;
  const warnings: string[] = [];
  const name = `${ap.metadata.namespace}/${ap.metadata.name}`;
  if (spec.targetRef !== undefined || (spec.targetRefs?.length ?? 0) > 0) {
    return { policy: undefined, warnings: [`${name}: targets a waypoint or gateway; not sent to ztunnel`] };
  }
  const action = spec.action ?? 'ALLOW';
  if (action !== 'ALLOW' && action !== 'DENY')
    return { policy: undefined, warnings: [`${name}: ztunnel does not support the ${action} action`] };
  if (ap.metadata.annotations['istio.io/dry-run'] === 'true')
    return { policy: undefined, warnings: [`${name}: dry-run policies are not sent to ztunnel`] };
  const scope = policyScope(spec.selector?.matchLabels ?? {}, ap.metadata.namespace, rootNamespace);
  const deny = action === 'DENY';
  const rules: AuthorizationModel['rules'][number][] = [];
  spec.rules?.forEach((rule, i) => {
    const where = `${name} rule ${i}`;
    let l7 = false;
    /** A clause whose every Match can never match makes the whole rule unable to match. */
    let never = false;
    const clauses: { matches: MatchModel[] }[] = [];
    const clause = (matches: { match: MatchModel; never: boolean }[]): void => {
      const live = matches.filter((m) => !m.never).map((m) => m.match);
      if (live.length === 0) never = true;
      clauses.push({ matches: live });
    };
    const to: PolicyOperation[] = rule?.to?.map((t) => t?.operation ?? {}) ?? [];
    if (to.length > 0) {
      clause(
        to.map((op) => {
          if (L7_OPERATION.some((k) => isSet(op[k]))) l7 = true;
          const p = portValues(op.ports);
          return {
            match: {
              ...emptyMatch(),
              destinationPorts: p.values,
              notDestinationPorts: portValues(op.notPorts).values,
            },
            never: p.never,
          };
        }),
      );
    }
    const from: PolicySource[] = rule?.from?.map((f) => f?.source ?? {}) ?? [];
    if (from.length > 0) {
      clause(
        from.map((src) => {
          if (L7_SOURCE.some((k) => isSet(src[k]))) l7 = true;
          const sas = (k: 'serviceAccounts' | 'notServiceAccounts'): { namespace: string; serviceAccount: string }[] =>
            strs(src[k]).map((s) =>
              s.includes('/')
                ? { namespace: s.split('/')[0]!, serviceAccount: s.split('/')[1]! }
                : { namespace: ap.metadata.namespace, serviceAccount: s },
            );
          const ips = ipValues(src.ipBlocks);
          return {
            match: {
              ...emptyMatch(),
              sourceIps: ips.values,
              notSourceIps: ipValues(src.notIpBlocks).values,
              namespaces: strs(src.namespaces).map(stringMatch),
              notNamespaces: strs(src.notNamespaces).map(stringMatch),
              principals: strs(src.principals).map(stringMatch),
              notPrincipals: strs(src.notPrincipals).map(stringMatch),
              serviceAccounts: sas('serviceAccounts'),
              notServiceAccounts: sas('notServiceAccounts'),
            },
            never: ips.never,
          };
        }),
      );
    }
    for (const c of rule?.when ?? []) {
      const m = conditionMatch(c);
      if (m !== undefined) {
        clause([m]);
        continue;
      }
      // An attribute ztunnel cannot see: in DENY the condition becomes an empty Match, which never matches, so
      // the rule cannot deny more than the author wrote.
      l7 = true;
      clauses.push({ matches: [emptyMatch()] });
    }
    if (never) {
      warnings.push(
        `${where}: every value of one of its port or IP lists is invalid, so it can never match; rule dropped`,
      );
      return;
    }
    if (l7) {
      if (!deny) {
        warnings.push(`${where}: uses HTTP attributes ztunnel cannot see; ALLOW rule dropped (more restrictive)`);
        return;
      }
      warnings.push(`${where}: HTTP attributes ignored by ztunnel in this DENY rule`);
    }
    rules.push({ clauses });
  });
  return {
    policy: {
      name: ap.metadata.name,
      namespace: ap.metadata.namespace,
      scope,
      action: deny ? AuthzAction.DENY : AuthzAction.ALLOW,
      rules,
      dryRun: false,
    },
    warnings,
  };
}

/**
 * A `when` condition on an attribute ztunnel sees, as a Match, with whether it can never match (its every port or
 * IP invalid); undefined for any other attribute.
 */
function conditionMatch(c: PolicyCondition | null): { match: MatchModel; never: boolean } | undefined {
  const values = strs(c?.values);
  const notValues = strs(c?.notValues);
  switch (c?.key) {
    case 'source.ip': {
      const v = ipValues(values);
      return {
        match: { ...emptyMatch(), sourceIps: v.values, notSourceIps: ipValues(notValues).values },
        never: v.never,
      };
    }
    case 'destination.ip': {
      const v = ipValues(values);
      return {
        match: { ...emptyMatch(), destinationIps: v.values, notDestinationIps: ipValues(notValues).values },
        never: v.never,
      };
    }
    case 'source.namespace':
      return {
        match: { ...emptyMatch(), namespaces: values.map(stringMatch), notNamespaces: notValues.map(stringMatch) },
        never: false,
      };
    case 'source.principal':
      return {
        match: { ...emptyMatch(), principals: values.map(stringMatch), notPrincipals: notValues.map(stringMatch) },
        never: false,
      };
    case 'destination.port': {
      const p = portValues(values);
      return {
        match: { ...emptyMatch(), destinationPorts: p.values, notDestinationPorts: portValues(notValues).values },
        never: p.never,
      };
    }
    default:
      return undefined;
  }
}
