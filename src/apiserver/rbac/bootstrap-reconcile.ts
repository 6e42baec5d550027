/**
 * kube-apiserver's `rbac/bootstrap-roles` post-start hook (kubernetes pkg/registry/rbac/rest/storage_rbac.go,
 * with pkg/registry/rbac/reconciliation's role and binding reconcilers in their additive mode): every role and
 * binding of the bootstrap policy is created when missing, and one that exists gets what the policy adds to it —
 * its labels and annotations where it has none of its own, the rules it lacks (broken down, one per verb,
 * resource and name, as kube appends them), the aggregation selectors it lacks, the subjects it lacks; a binding
 * to another role is replaced. Nothing an administrator added is taken away, and an object annotated
 * `rbac.authorization.kubernetes.io/autoupdate: "false"` is left as it is.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from '../../lib/log.js';
import { ApiError } from '../api-error.js';
import type { KindInfo } from '../kind-info.js';
import type { KubeObject } from '../kube-object.js';
import type { ResourceStore } from '../resource-store.js';
import { asArray, asObject } from '../validation/json-fields.js';
import { BOOTSTRAP_CLUSTER_ROLE_BINDINGS, BOOTSTRAP_CLUSTER_ROLES } from './bootstrap-policy.js';
import { CONTROLLER_CLUSTER_ROLE_BINDINGS, CONTROLLER_CLUSTER_ROLES } from './controller-policy.js';
import { BOOTSTRAP_ROLE_BINDINGS, BOOTSTRAP_ROLES } from './namespace-policy.js';
import { AUTO_UPDATE_ANNOTATION } from './policy-builders.js';
import { CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, ROLE_BINDINGS, ROLES } from './rbac-cache.js';
import { uncoveredRules } from './rule-coverage.js';
import { policyRulesOf, roleRefOf, ruleJson } from './policy-rule.js';

/** The objects the hook keeps, in the order it reconciles them. */
const POLICY: readonly (readonly [KindInfo, readonly KubeObject[]])[] = [
  [CLUSTER_ROLES, [...BOOTSTRAP_CLUSTER_ROLES, ...CONTROLLER_CLUSTER_ROLES]],
  [CLUSTER_ROLE_BINDINGS, [...BOOTSTRAP_CLUSTER_ROLE_BINDINGS, ...CONTROLLER_CLUSTER_ROLE_BINDINGS]],
  [ROLES, BOOTSTRAP_ROLES],
  [ROLE_BINDINGS, BOOTSTRAP_ROLE_BINDINGS],
];

/** Every object of the bootstrap policy (for tests and documentation). */
export const BOOTSTRAP_POLICY_OBJECTS: readonly KubeObject[] = POLICY.flatMap(([, objects]) => objects);

const selectorsOf = (o: KubeObject): unknown[] => asArray(asObject(o.aggregationRule)?.clusterRoleSelectors) ?? [];

/** Sets `existing`'s labels and annotations to the expected ones under its own; true when that changed them. */
function mergeMetadata(existing: KubeObject, expected: KubeObject): boolean {
  let changed = false;
  for (const field of ['labels', 'annotations'] as const) {
    const merged = { ...expected.metadata[field], ...existing.metadata[field] };
    if (!isDeepStrictEqual(merged, existing.metadata[field] ?? {})) {
      existing.metadata[field] = merged;
      changed = true;
    }
  }
  return changed;
}

/** Gives `existing` (a Role or ClusterRole) what `expected` adds to it, in place; true when that changed it. */
export function reconcileRole(existing: KubeObject, expected: KubeObject): boolean {
  let changed = mergeMetadata(existing, expected);
  const missing = uncoveredRules(policyRulesOf(existing), policyRulesOf(expected));
  if (missing.length > 0) {
    existing.rules = [...(asArray(existing.rules) ?? []), ...missing.map(ruleJson)];
    changed = true;
  }
  if (expected.aggregationRule === undefined) {
    if (existing.aggregationRule !== undefined && existing.aggregationRule !== null) {
      delete existing.aggregationRule;
      changed = true;
    }
    return changed;
  }
  const have = [...selectorsOf(existing)];
  const lacking = selectorsOf(expected).filter((s) => {
    const at = have.findIndex((h) => isDeepStrictEqual(h, s));
    if (at >= 0) have.splice(at, 1);
    return at < 0;
  });
  if (lacking.length > 0) {
    existing.aggregationRule = { clusterRoleSelectors: [...selectorsOf(existing), ...lacking] };
    changed = true;
  }
  return changed;
}

/** Gives `existing` (a binding to the same role) the subjects `expected` adds to it, in place; true when changed. */
export function reconcileBinding(existing: KubeObject, expected: KubeObject): boolean {
  let changed = mergeMetadata(existing, expected);
  const subjects = asArray(existing.subjects) ?? [];
  const lacking = (asArray(expected.subjects) ?? []).filter((s) => !subjects.some((h) => isDeepStrictEqual(h, s)));
  if (lacking.length > 0) {
    existing.subjects = [...subjects, ...lacking];
    changed = true;
  }
  return changed;
}

const isProtected = (o: KubeObject): boolean => o.metadata.annotations?.[AUTO_UPDATE_ANNOTATION] === 'false';

async function createIfAbsent(store: ResourceStore, k: KindInfo, obj: KubeObject): Promise<void> {
  try {
    await store.create(k, obj.metadata.namespace, structuredClone(obj));
  } catch (e) {
    if (!(e instanceof ApiError && e.reason === 'AlreadyExists')) throw e;
  }
}

async function reconcileOne(store: ResourceStore, k: KindInfo, expected: KubeObject, log: Logger): Promise<void> {
  const namespace = expected.metadata.namespace;
  const name = expected.metadata.name ?? '';
  const existing = store.find(k, namespace, name);
  const what = { resource: k.plural, namespace, name };
  if (existing === undefined) {
    await createIfAbsent(store, k, expected);
    log.debug(what, 'created a bootstrap RBAC object');
    return;
  }
  const isBinding = k === CLUSTER_ROLE_BINDINGS || k === ROLE_BINDINGS;
  const recreate = isBinding && !isDeepStrictEqual(roleRefOf(existing), roleRefOf(expected));
  const reconcile = (o: KubeObject): boolean =>
    isBinding ? reconcileBinding(o, expected) : reconcileRole(o, expected);
  if (!recreate && !reconcile(structuredClone(existing))) return;
  if (isProtected(existing)) {
    log.info(
      what,
      `kept a bootstrap RBAC object that differs from the policy: it is annotated ${AUTO_UPDATE_ANNOTATION}: "false"`,
    );
    return;
  }
  if (recreate) {
    await store.delete(k, namespace, name);
    await createIfAbsent(store, k, expected);
  } else {
    await store.mutate(k, namespace, name, (o) => void reconcile(o));
  }
  log.info(what, 'reconciled a bootstrap RBAC object with the policy');
}

/**
 * Brings the store's bootstrap roles and bindings up to the policy. The system namespaces must exist. The objects
 * of one kind are written together, so that the store commits them in few transactions.
 */
export async function reconcileBootstrapPolicy(store: ResourceStore, log: Logger): Promise<void> {
  for (const [k, objects] of POLICY) await Promise.all(objects.map((o) => reconcileOne(store, k, o, log)));
}
