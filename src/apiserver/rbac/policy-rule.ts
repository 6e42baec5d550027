/**
 * RBAC's PolicyRule, Subject and RoleRef (k8s.io/api rbac/v1 types.go) as the evaluator reads them: every list
 * present (empty when the object leaves it out), read once from a stored object, whose shape the RBAC kinds'
 * decode check and validation have already vouched for. `ruleJson` writes a rule back as the Go type serializes
 * it (`verbs` always, the other lists only when non-empty).
 */
import type { KubeObject } from '../kube-object.js';
import { asArray, asObject, asString } from '../validation/json-fields.js';

export interface PolicyRule {
  readonly verbs: readonly string[];
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly resourceNames: readonly string[];
  readonly nonResourceURLs: readonly string[];
}

export interface Subject {
  readonly kind: string;
  readonly apiGroup: string;
  readonly name: string;
  readonly namespace: string;
}

export interface RoleRef {
  readonly apiGroup: string;
  readonly kind: string;
  readonly name: string;
}

/** `*`: every verb, group, resource or URL (rbacv1.VerbAll, APIGroupAll, ResourceAll, NonResourceAll). */
export const ALL = '*';

const strings = (v: unknown): string[] => (asArray(v) ?? []).filter((s): s is string => typeof s === 'string');

export function policyRule(v: unknown): PolicyRule {
  const o = asObject(v) ?? {};
  return {
    verbs: strings(o.verbs),
    apiGroups: strings(o.apiGroups),
    resources: strings(o.resources),
    resourceNames: strings(o.resourceNames),
    nonResourceURLs: strings(o.nonResourceURLs),
  };
}

/** The rules of a stored Role or ClusterRole (`rules: null` is none). */
export function policyRulesOf(role: KubeObject): PolicyRule[] {
  return (asArray(role.rules) ?? []).map(policyRule);
}

export function subjectsOf(binding: KubeObject): Subject[] {
  return (asArray(binding.subjects) ?? []).map((v) => {
    const o = asObject(v) ?? {};
    const s = (k: string): string => asString(o[k]) ?? '';
    return { kind: s('kind'), apiGroup: s('apiGroup'), name: s('name'), namespace: s('namespace') };
  });
}

export function roleRefOf(binding: KubeObject): RoleRef {
  const o = asObject(binding.roleRef) ?? {};
  const s = (k: string): string => asString(o[k]) ?? '';
  return { apiGroup: s('apiGroup'), kind: s('kind'), name: s('name') };
}

/** A rule as the Go type serializes it: `verbs`, then each other list when non-empty. */
export function ruleJson(r: PolicyRule): Record<string, string[]> {
  const out: Record<string, string[]> = { verbs: [...r.verbs] };
  for (const k of ['apiGroups', 'resources', 'resourceNames', 'nonResourceURLs'] as const)
    if (r[k].length > 0) out[k] = [...r[k]];
  return out;
}

/** Whether two rules are the same rule (Go's semantic equality: an absent list equals an empty one). */
export function sameRule(a: PolicyRule, b: PolicyRule): boolean {
  return JSON.stringify(ruleJson(a)) === JSON.stringify(ruleJson(b));
}
