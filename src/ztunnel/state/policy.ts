import type { Cidr } from '../../lib/ip.js';

/** ztunnel's StringMatch, serialised as `{Exact: "x"}`, `{Prefix: "x"}`, `{Suffix: "x"}` or `{Presence: []}`. */
export type StringMatch =
  | { readonly Exact: string }
  | { readonly Prefix: string }
  | { readonly Suffix: string }
  | { readonly Presence: readonly [] };

export interface ServiceAccountMatch {
  readonly namespace: string;
  readonly serviceAccount: string;
}

/** One `Match` of a clause (ztunnel `src/rbac.rs`). Every field list may be empty. */
export interface RbacMatch {
  readonly namespaces: readonly StringMatch[];
  readonly notNamespaces: readonly StringMatch[];
  readonly serviceAccounts: readonly ServiceAccountMatch[];
  readonly notServiceAccounts: readonly ServiceAccountMatch[];
  readonly principals: readonly StringMatch[];
  readonly notPrincipals: readonly StringMatch[];
  readonly sourceIps: readonly Cidr[];
  readonly notSourceIps: readonly Cidr[];
  readonly destinationIps: readonly Cidr[];
  readonly notDestinationIps: readonly Cidr[];
  readonly destinationPorts: readonly number[];
  readonly notDestinationPorts: readonly number[];
}

export type RbacScope = 'Global' | 'Namespace' | 'WorkloadSelector';
export type RbacAction = 'Allow' | 'Deny';

/** An L4 authorization policy; `rules` is rules → clauses → matches, as in ztunnel's `/config_dump`. */
export interface Authorization {
  readonly name: string;
  readonly namespace: string;
  readonly scope: RbacScope;
  readonly action: RbacAction;
  readonly rules: readonly (readonly (readonly RbacMatch[])[])[];
  readonly dryRun: boolean;
  /**
   * Set on a stand-in for a policy ztunnel could not accept (or that a workload names but ztunnel does not have):
   * why. Such a policy denies every connection it could cover, so a rejected ALLOW never leaves its workloads
   * open and a rejected DENY never lets through what it was written to stop.
   */
  readonly rejected?: string;
}

export function policyKey(p: { namespace: string; name: string }): string {
  return `${p.namespace}/${p.name}`;
}

/**
 * The stand-in for a policy that could not be accepted: a DENY of everything, in the scope the policy claimed.
 * `key` is `namespace/name` (the xDS resource name).
 */
export function failClosedPolicy(key: string, scope: RbacScope, reason: string): Authorization {
  const slash = key.indexOf('/');
  return {
    name: slash < 0 ? key : key.slice(slash + 1),
    namespace: slash < 0 ? '' : key.slice(0, slash),
    scope,
    action: 'Deny',
    rules: [[]],
    dryRun: false,
    rejected: reason,
  };
}
