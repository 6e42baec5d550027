/**
 * Whether one RBAC rule allows a request and whether one binding subject is the requesting user, as Kubernetes'
 * RBAC authorizer decides (kubernetes pkg/apis/rbac/v1/evaluation_helpers.go `RuleAllows` and
 * pkg/registry/rbac/validation/rule.go `appliesToUser`): `*` matches any verb, group, resource or URL; a rule for
 * `resource/subresource` or `*\/subresource` matches a subresource request; resourceNames, when given, must name
 * the object; a URL ending in `*` matches the paths it prefixes; a ServiceAccount subject without a namespace is in
 * its binding's namespace.
 */
import type { Attributes } from '../auth/authorizer.js';
import { serviceAccountUsername, type UserInfo } from '../auth/user-info.js';
import { ALL, type PolicyRule, type Subject } from './policy-rule.js';

const matches = (list: readonly string[], v: string): boolean => list.includes(ALL) || list.includes(v);

function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  return rule.resources.some(
    (r) => r === ALL || r === combined || (subresource !== '' && r === `${ALL}/${subresource}`),
  );
}

export function nonResourceUrlMatches(ruleUrl: string, path: string): boolean {
  return ruleUrl === ALL || ruleUrl === path || (ruleUrl.endsWith('*') && path.startsWith(ruleUrl.replace(/\*+$/, '')));
}

export function ruleAllows(a: Attributes, rule: PolicyRule): boolean {
  if (!matches(rule.verbs, a.verb)) return false;
  if (!('resource' in a)) return rule.nonResourceURLs.some((u) => nonResourceUrlMatches(u, a.path));
  const sub = a.subresource ?? '';
  return (
    matches(rule.apiGroups, a.apiGroup) &&
    resourceMatches(rule, sub === '' ? a.resource : `${a.resource}/${sub}`, sub) &&
    (rule.resourceNames.length === 0 || rule.resourceNames.includes(a.name ?? ''))
  );
}

/** Whether `s` names `user`; `namespace` is the binding's ('' for a ClusterRoleBinding). */
export function appliesToUser(user: UserInfo, s: Subject, namespace: string): boolean {
  switch (s.kind) {
    case 'User':
      return user.username === s.name;
    case 'Group':
      return user.groups.includes(s.name);
    case 'ServiceAccount': {
      const ns = s.namespace !== '' ? s.namespace : namespace;
      return ns !== '' && user.username === serviceAccountUsername(ns, s.name);
    }
    default:
      return false;
  }
}
