/**
 * Whether one set of RBAC rules holds every permission another grants, and how the API server names what is
 * missing: k8s.io/component-helpers auth/rbac/validation/policy_comparator.go (`Covers`: each servant rule broken
 * down to one group, resource, verb and name, then matched against the owner's rules, `*` and `*\/subresource`
 * included) and kubernetes pkg/registry/rbac/validation/policy_compact.go (`CompactRules`: broken-down rules that
 * differ only in their verb join again) with pkg/apis/rbac/v1/evaluation_helpers.go `CompactString`
 * (`{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`). The escalation check and the
 * bootstrap policy's reconciliation both rest on it.
 */
import { nonResourceUrlMatches } from './rule-evaluation.js';
import { ALL, type PolicyRule } from './policy-rule.js';

const single = (p: Partial<PolicyRule>): PolicyRule => ({
  verbs: [],
  apiGroups: [],
  resources: [],
  resourceNames: [],
  nonResourceURLs: [],
  ...p,
});

/** One rule per group, resource, verb and resource name, and per URL and verb. */
export function breakdownRule(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const group of rule.apiGroups)
    for (const resource of rule.resources)
      for (const verb of rule.verbs) {
        const base = { apiGroups: [group], resources: [resource], verbs: [verb] };
        if (rule.resourceNames.length === 0) out.push(single(base));
        else for (const name of rule.resourceNames) out.push(single({ ...base, resourceNames: [name] }));
      }
  for (const url of rule.nonResourceURLs)
    for (const verb of rule.verbs) out.push(single({ nonResourceURLs: [url], verbs: [verb] }));
  return out;
}

const hasAll = (set: readonly string[], wanted: readonly string[]): boolean => wanted.every((w) => set.includes(w));

function resourcesCovered(owner: readonly string[], wanted: readonly string[]): boolean {
  if (owner.includes(ALL) || hasAll(owner, wanted)) return true;
  return wanted.every((r) => {
    if (owner.includes(r)) return true;
    const slash = r.indexOf('/');
    return slash >= 0 && owner.includes(`${ALL}${r.slice(slash)}`);
  });
}

/** Whether `owner` covers `sub`, a rule of at most one verb, resource and name (policy_comparator.go `ruleCovers`). */
function ruleCovers(owner: PolicyRule, sub: PolicyRule): boolean {
  const names =
    owner.resourceNames.length === 0 ||
    (sub.resourceNames.length > 0 && hasAll(owner.resourceNames, sub.resourceNames));
  return (
    (owner.verbs.includes(ALL) || hasAll(owner.verbs, sub.verbs)) &&
    (owner.apiGroups.includes(ALL) || hasAll(owner.apiGroups, sub.apiGroups)) &&
    resourcesCovered(owner.resources, sub.resources) &&
    sub.nonResourceURLs.every((u) => owner.nonResourceURLs.some((o) => nonResourceUrlMatches(o, u))) &&
    names
  );
}

/** The broken-down rules of `servant` that no rule of `owner` covers: none when `owner` holds them all. */
export function uncoveredRules(owner: readonly PolicyRule[], servant: readonly PolicyRule[]): PolicyRule[] {
  return servant.flatMap(breakdownRule).filter((sub) => !owner.some((o) => ruleCovers(o, sub)));
}

/** Rules of one group and one resource, nothing else, join into one with all their verbs; the rest stay. */
export function compactRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const simple = new Map<string, PolicyRule>();
  const rest: PolicyRule[] = [];
  for (const r of rules) {
    const isSimple =
      r.apiGroups.length === 1 &&
      r.resources.length === 1 &&
      r.resourceNames.length === 0 &&
      r.nonResourceURLs.length === 0;
    if (!isSimple) {
      rest.push(r);
      continue;
    }
    const key = JSON.stringify([r.apiGroups[0], r.resources[0]]);
    const seen = simple.get(key);
    simple.set(key, seen === undefined ? r : { ...seen, verbs: [...seen.verbs, ...r.verbs] });
  }
  return [...rest, ...simple.values()];
}

/** Go's `%q` of a `[]string`: `["a" "b"]`. */
export const goQuotedList = (l: readonly string[]): string => `[${l.map((s) => JSON.stringify(s)).join(' ')}]`;

export function compactString(r: PolicyRule): string {
  const parts: string[] = [];
  if (r.apiGroups.length > 0) parts.push(`APIGroups:${goQuotedList(r.apiGroups)}`);
  if (r.resources.length > 0) parts.push(`Resources:${goQuotedList(r.resources)}`);
  if (r.nonResourceURLs.length > 0) parts.push(`NonResourceURLs:${goQuotedList(r.nonResourceURLs)}`);
  if (r.resourceNames.length > 0) parts.push(`ResourceNames:${goQuotedList(r.resourceNames)}`);
  if (r.verbs.length > 0) parts.push(`Verbs:${goQuotedList(r.verbs)}`);
  return `{${parts.join(', ')}}`;
}
