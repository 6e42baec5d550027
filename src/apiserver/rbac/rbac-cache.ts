/**
 * The RBAC objects the authorizer decides from, held in memory and kept current from the store's watch, as
 * kube-apiserver's RBAC authorizer reads them through informers (kubernetes plugin/pkg/auth/authorizer/rbac and
 * pkg/registry/rbac/validation/rule.go `DefaultRuleResolver`): every ClusterRole, Role, ClusterRoleBinding and
 * RoleBinding, each role's rules read once. A store write's watch event is handed over before the write is
 * acknowledged, so a client that has created a binding is authorized by it on its next request.
 *
 * `visitRulesFor` walks the rules that apply to a user in a namespace: ClusterRoleBindings first, then, for a
 * namespaced request, that namespace's RoleBindings, each through the first of its subjects that is the user. A
 * binding whose role does not exist yields an error instead of rules (the authorizer reports it in its reason).
 */
import type { Logger } from '../../lib/log.js';
import type { UserInfo } from '../auth/user-info.js';
import { findKind } from '../kinds.js';
import type { KindInfo } from '../kind-info.js';
import type { KubeObject } from '../kube-object.js';
import type { ResourceStore } from '../resource-store.js';
import { appliesToUser } from './rule-evaluation.js';
import { policyRulesOf, roleRefOf, subjectsOf, type PolicyRule, type RoleRef, type Subject } from './policy-rule.js';

const RBAC_GROUP = 'rbac.authorization.k8s.io';
const rbacKind = (plural: string): KindInfo => findKind(RBAC_GROUP, 'v1', plural) as KindInfo;
export const CLUSTER_ROLES = rbacKind('clusterroles');
export const ROLES = rbacKind('roles');
export const CLUSTER_ROLE_BINDINGS = rbacKind('clusterrolebindings');
export const ROLE_BINDINGS = rbacKind('rolebindings');
const KINDS = [CLUSTER_ROLES, ROLES, CLUSTER_ROLE_BINDINGS, ROLE_BINDINGS];

export interface CachedRole {
  readonly object: KubeObject;
  readonly rules: readonly PolicyRule[];
}

interface CachedBinding {
  readonly kind: 'ClusterRoleBinding' | 'RoleBinding';
  readonly name: string;
  /** '' for a ClusterRoleBinding. */
  readonly namespace: string;
  readonly roleRef: RoleRef;
  readonly subjects: readonly Subject[];
}

/** What granted a rule: the binding and the subject of it that is the user. */
export interface RuleSource {
  readonly binding: CachedBinding;
  readonly subject: Subject;
}

/** A binding's role that does not exist (the lister's or the registry's NotFound, by whoever reports it). */
export interface MissingRole {
  readonly kind: string;
  readonly name: string;
}

export const isMissingRole = (r: readonly PolicyRule[] | MissingRole): r is MissingRole => !Array.isArray(r);

/** Gets each rule with its source; returns false to stop the walk. */
export type RuleVisitor = (source: RuleSource, rule: PolicyRule) => boolean;
export type MissingRoleVisitor = (missing: MissingRole) => void;

const key = (namespace: string, name: string): string => `${namespace}/${name}`;

function bindingOf(o: KubeObject): CachedBinding {
  return {
    kind: o.kind === 'RoleBinding' ? 'RoleBinding' : 'ClusterRoleBinding',
    name: o.metadata.name ?? '',
    namespace: o.kind === 'RoleBinding' ? (o.metadata.namespace ?? '') : '',
    roleRef: roleRefOf(o),
    subjects: subjectsOf(o),
  };
}

export class RbacCache {
  private readonly clusterRoles = new Map<string, CachedRole>();
  private readonly roles = new Map<string, CachedRole>();
  private readonly clusterRoleBindings = new Map<string, CachedBinding>();
  /** RoleBindings by namespace, then name. */
  private readonly roleBindings = new Map<string, Map<string, CachedBinding>>();
  private readonly listeners = new Set<(kind: string) => void>();
  private readonly stops: (() => void)[] = [];

  /** A cache of `objects` alone (for tests and for checking a set of objects before it is applied). */
  static of(objects: readonly KubeObject[]): RbacCache {
    const c = new RbacCache();
    for (const o of objects) c.put(o);
    return c;
  }

  /** Lists the four kinds from `store` and follows their changes until `stop`. */
  static follow(store: ResourceStore, log: Logger): RbacCache {
    const c = new RbacCache();
    for (const k of KINDS) {
      const list = store.list(k, undefined);
      for (const o of list.items) c.put(o);
      c.stops.push(
        store.watch(
          k,
          undefined,
          Number(list.metadata.resourceVersion),
          {},
          (e) => (e.type === 'DELETED' ? c.remove(e.object) : c.put(e.object)),
          (err: unknown) =>
            log.error({ err: String(err), resource: k.plural }, 'the RBAC cache stopped following the store'),
        ),
      );
    }
    return c;
  }

  stop(): void {
    for (const s of this.stops.splice(0)) s();
  }

  /** Calls `listener` with the kind after every change. */
  onChange(listener: (kind: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  put(o: KubeObject): void {
    const name = o.metadata.name ?? '';
    const namespace = o.metadata.namespace ?? '';
    switch (o.kind) {
      case 'ClusterRole':
        this.clusterRoles.set(name, { object: o, rules: policyRulesOf(o) });
        break;
      case 'Role':
        this.roles.set(key(namespace, name), { object: o, rules: policyRulesOf(o) });
        break;
      case 'ClusterRoleBinding':
        this.clusterRoleBindings.set(name, bindingOf(o));
        break;
      case 'RoleBinding': {
        const inNamespace = this.roleBindings.get(namespace) ?? new Map<string, CachedBinding>();
        inNamespace.set(name, bindingOf(o));
        this.roleBindings.set(namespace, inNamespace);
        break;
      }
      default:
        return;
    }
    this.changed(o.kind);
  }

  remove(o: KubeObject): void {
    const name = o.metadata.name ?? '';
    const namespace = o.metadata.namespace ?? '';
    if (o.kind === 'ClusterRole') this.clusterRoles.delete(name);
    else if (o.kind === 'Role') this.roles.delete(key(namespace, name));
    else if (o.kind === 'ClusterRoleBinding') this.clusterRoleBindings.delete(name);
    else if (o.kind === 'RoleBinding') this.roleBindings.get(namespace)?.delete(name);
    else return;
    this.changed(o.kind);
  }

  private changed(kind: string): void {
    for (const l of this.listeners) l(kind);
  }

  clusterRole(name: string): CachedRole | undefined {
    return this.clusterRoles.get(name);
  }

  /** Every ClusterRole, by name. */
  allClusterRoles(): CachedRole[] {
    return [...this.clusterRoles.keys()].sort().map((n) => this.clusterRoles.get(n)!);
  }

  /** The rules a binding's roleRef grants: a Role in the binding's namespace, or a ClusterRole. */
  roleReferenceRules(ref: RoleRef, bindingNamespace: string): readonly PolicyRule[] | MissingRole {
    const role =
      ref.kind === 'Role' ? this.roles.get(key(bindingNamespace, ref.name)) : this.clusterRoles.get(ref.name);
    return role?.rules ?? { kind: ref.kind, name: ref.name };
  }

  /** Walks the rules that apply to `user` in `namespace` ('' for cluster-scoped and non-resource requests). */
  visitRulesFor(user: UserInfo, namespace: string, visit: RuleVisitor, missing: MissingRoleVisitor = () => {}): void {
    const walk = (bindings: Iterable<CachedBinding>): boolean => {
      for (const binding of bindings) {
        const subject = binding.subjects.find((s) => appliesToUser(user, s, binding.namespace));
        if (subject === undefined) continue;
        const rules = this.roleReferenceRules(binding.roleRef, binding.namespace);
        if (isMissingRole(rules)) {
          missing(rules);
          continue;
        }
        for (const rule of rules) if (!visit({ binding, subject }, rule)) return false;
      }
      return true;
    };
    if (!walk(this.clusterRoleBindings.values())) return;
    if (namespace !== '') walk(this.roleBindings.get(namespace)?.values() ?? []);
  }

  /** Every rule that applies to `user` in `namespace`, and the roles its bindings name that do not exist. */
  rulesFor(user: UserInfo, namespace: string): { rules: PolicyRule[]; missing: MissingRole[] } {
    const rules: PolicyRule[] = [];
    const missing: MissingRole[] = [];
    this.visitRulesFor(
      user,
      namespace,
      (_, r) => rules.push(r) > 0,
      (m) => missing.push(m),
    );
    return { rules, missing };
  }
}
