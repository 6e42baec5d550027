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

/** One `Match` of a clause (spec §9.1). Every field list may be empty. */
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
}

export function policyKey(p: { namespace: string; name: string }): string {
  return `${p.namespace}/${p.name}`;
}
