import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { child, goStringSlice, index, invalid, notSupported, required } from '../validation/field-errors.js';
import { asArray, asObject, asString, objectsOf, setDefault, type JsonObject } from '../validation/json-fields.js';
import { nameIsDnsSubdomain, nameIsPathSegment } from '../validation/formats.js';
import { validateLabelSelector } from '../validation/label-selector.js';

/**
 * rbac.authorization.k8s.io/v1 Roles, ClusterRoles, RoleBindings and ClusterRoleBindings, defaulted as
 * kubernetes `pkg/apis/rbac/v1/defaults.go` defaults them (a binding's `roleRef.apiGroup`, a User or Group
 * subject's `apiGroup`) and checked as `pkg/apis/rbac/validation/validation.go` checks them: every rule has
 * verbs and either resources with API groups or non-resource URLs (never both, and never in a Role); resource
 * names name one resource; an aggregation rule has selectors; a binding refers to a Role or ClusterRole of this
 * group by a path-segment name, and never changes that reference; subjects are ServiceAccounts (a DNS subdomain,
 * with a namespace in a ClusterRoleBinding), Users or Groups. Who may write them is the escalation check's
 * business (`src/apiserver/rbac/escalation-check.ts`).
 */

export const RBAC_GROUP = 'rbac.authorization.k8s.io';
const SUBJECT_KINDS = ['ServiceAccount', 'User', 'Group'];

const strings = (v: unknown): string[] => (asArray(v) ?? []).filter((s): s is string => typeof s === 'string');

/** A role's `rules` is always written, `null` when empty, as the Go type serializes it. */
function defaultRole(obj: KubeObject): void {
  if (obj.rules === undefined) obj.rules = null;
}

function defaultBinding(obj: KubeObject): void {
  const ref = asObject(obj.roleRef);
  if (ref !== undefined && (asString(ref.apiGroup) ?? '') === '') ref.apiGroup = RBAC_GROUP;
  for (const s of objectsOf(obj.subjects))
    if (s.kind === 'User' || s.kind === 'Group') setDefault(s, 'apiGroup', RBAC_GROUP);
}

function validatePolicyRule(rule: JsonObject, namespaced: boolean, at: string): StatusCause[] {
  const errs: StatusCause[] = [];
  if (strings(rule.verbs).length === 0)
    errs.push(required(child(at, 'verbs'), 'verbs must contain at least one value'));
  const urls = strings(rule.nonResourceURLs);
  const groups = strings(rule.apiGroups);
  const resources = strings(rule.resources);
  const names = strings(rule.resourceNames);
  if (urls.length > 0) {
    const value = goStringSlice(urls);
    if (namespaced)
      errs.push(invalid(child(at, 'nonResourceURLs'), value, 'namespaced rules cannot apply to non-resource URLs'));
    if (groups.length > 0 || resources.length > 0 || names.length > 0)
      errs.push(
        invalid(
          child(at, 'nonResourceURLs'),
          value,
          'rules cannot apply to both regular resources and non-resource URLs',
        ),
      );
    return errs;
  }
  if (groups.length === 0)
    errs.push(required(child(at, 'apiGroups'), 'resource rules must supply at least one api group'));
  if (resources.length === 0)
    errs.push(required(child(at, 'resources'), 'resource rules must supply at least one resource'));
  if (names.length > 0 && resources.length > 1)
    errs.push(required(child(at, 'resourceNames'), 'resource names cannot apply to multiple resources'));
  return errs;
}

function validateRules(obj: KubeObject, namespaced: boolean): StatusCause[] {
  return objectsOf(obj.rules).flatMap((r, i) => validatePolicyRule(r, namespaced, index('rules', i)));
}

function validateAggregationRule(obj: KubeObject): StatusCause[] {
  const rule = asObject(obj.aggregationRule);
  if (rule === undefined) return [];
  const path = 'aggregationRule.clusterRoleSelectors';
  const selectors = objectsOf(rule.clusterRoleSelectors);
  if (selectors.length === 0)
    return [required(path, 'at least one clusterRoleSelector required if aggregationRule is non-nil')];
  return selectors.flatMap((s, i) => validateLabelSelector(s, index(path, i)));
}

function validateSubject(s: JsonObject, namespaced: boolean, at: string): StatusCause[] {
  const errs: StatusCause[] = [];
  const name = asString(s.name) ?? '';
  const apiGroup = asString(s.apiGroup) ?? '';
  const kind = asString(s.kind) ?? '';
  if (name === '') errs.push(required(child(at, 'name')));
  switch (kind) {
    case 'ServiceAccount':
      if (name !== '') for (const m of nameIsDnsSubdomain(name, false)) errs.push(invalid(child(at, 'name'), name, m));
      if (apiGroup !== '') errs.push(notSupported(child(at, 'apiGroup'), apiGroup, ['']));
      if (!namespaced && (asString(s.namespace) ?? '') === '') errs.push(required(child(at, 'namespace')));
      break;
    case 'User':
    case 'Group':
      if (name === '') errs.push(invalid(child(at, 'name'), name, `${kind.toLowerCase()} name cannot be empty`));
      if (apiGroup !== RBAC_GROUP) errs.push(notSupported(child(at, 'apiGroup'), apiGroup, [RBAC_GROUP]));
      break;
    default:
      errs.push(notSupported(child(at, 'kind'), kind, SUBJECT_KINDS));
  }
  return errs;
}

function validateBinding(obj: KubeObject, namespaced: boolean): StatusCause[] {
  const errs: StatusCause[] = [];
  const ref = asObject(obj.roleRef) ?? {};
  const apiGroup = asString(ref.apiGroup) ?? '';
  const kind = asString(ref.kind) ?? '';
  const name = asString(ref.name) ?? '';
  if (apiGroup !== RBAC_GROUP) errs.push(notSupported('roleRef.apiGroup', apiGroup, [RBAC_GROUP]));
  const kinds = namespaced ? ['Role', 'ClusterRole'] : ['ClusterRole'];
  if (!kinds.includes(kind)) errs.push(notSupported('roleRef.kind', kind, kinds));
  if (name === '') errs.push(required('roleRef.name'));
  else for (const m of nameIsPathSegment(name, false)) errs.push(invalid('roleRef.name', name, m));
  objectsOf(obj.subjects).forEach((s, i) => errs.push(...validateSubject(s, namespaced, index('subjects', i))));
  return errs;
}

/** A binding's roleRef as the refusal of its change prints it: Go's `%#v` of the internal `rbac.RoleRef`. */
function goRoleRef(ref: JsonObject): { go: string } {
  const f = (k: string): string => JSON.stringify(asString(ref[k]) ?? '');
  return { go: `rbac.RoleRef{APIGroup:${f('apiGroup')}, Kind:${f('kind')}, Name:${f('name')}}` };
}

function validateBindingUpdate(obj: KubeObject, old: KubeObject, namespaced: boolean): StatusCause[] {
  const now = asObject(obj.roleRef) ?? {};
  const before = asObject(old.roleRef) ?? {};
  const same = ['apiGroup', 'kind', 'name'].every((k) => (asString(now[k]) ?? '') === (asString(before[k]) ?? ''));
  return [
    ...validateBinding(obj, namespaced),
    ...(same ? [] : [invalid('roleRef', goRoleRef(now), 'cannot change roleRef')]),
  ];
}

export const roleStrategy: Strategy = {
  prepareForCreate: defaultRole,
  prepareForUpdate: defaultRole,
  validate: (obj) => validateRules(obj, true),
  validateUpdate: (obj) => validateRules(obj, true),
};

export const clusterRoleStrategy: Strategy = {
  prepareForCreate: defaultRole,
  prepareForUpdate: defaultRole,
  validate: (obj) => [...validateRules(obj, false), ...validateAggregationRule(obj)],
  validateUpdate: (obj) => [...validateRules(obj, false), ...validateAggregationRule(obj)],
};

export const roleBindingStrategy: Strategy = {
  prepareForCreate: defaultBinding,
  prepareForUpdate: defaultBinding,
  validate: (obj) => validateBinding(obj, true),
  validateUpdate: (obj, old) => validateBindingUpdate(obj, old, true),
};

export const clusterRoleBindingStrategy: Strategy = {
  prepareForCreate: defaultBinding,
  prepareForUpdate: defaultBinding,
  validate: (obj) => validateBinding(obj, false),
  validateUpdate: (obj, old) => validateBindingUpdate(obj, old, false),
};
