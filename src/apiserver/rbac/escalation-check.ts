/**
 * Privilege-escalation prevention for writes of RBAC objects, as kubernetes pkg/registry/rbac does it
 * (role/policybased, clusterrole/policybased, rolebinding/policybased, clusterrolebinding/policybased storage,
 * escalation_check.go and validation/rule.go `ConfirmNoEscalation`): a user may write a Role or ClusterRole only
 * with rules it holds itself (in the role's namespace, or cluster-wide), unless it may `escalate` that resource;
 * may set or change a ClusterRole's aggregationRule only holding `*` on everything; and may bind a role only
 * holding its rules in the binding's namespace, unless it may `bind` that role. `system:masters` may do all of
 * it, as may the server's own writes (no user). A write that changes nothing but the fields the garbage
 * collector sets (owner references, finalizers) is never checked. A refusal is kube-apiserver's 403:
 * `roles.rbac.authorization.k8s.io "x" is forbidden: user "u" (groups=["g"]) is attempting to grant RBAC
 * permissions not currently held:` followed by the missing rules, one a line.
 */
import { isDeepStrictEqual } from 'node:util';
import { ApiError } from '../api-error.js';
import { aggregateErrors, type Authorizer } from '../auth/authorizer.js';
import { SYSTEM_MASTERS, type UserInfo } from '../auth/user-info.js';
import type { KindInfo } from '../kind-info.js';
import type { KubeObject } from '../kube-object.js';
import { isMissingRole, type MissingRole, type RbacCache } from './rbac-cache.js';
import { compactRules, compactString, goQuotedList, uncoveredRules } from './rule-coverage.js';
import { policyRulesOf, roleRefOf, type PolicyRule } from './policy-rule.js';
import { asArray, asObject } from '../validation/json-fields.js';

const RBAC_GROUP = 'rbac.authorization.k8s.io';

/** What may hold an aggregation rule: everything (clusterrole/policybased `fullAuthority`). */
const FULL_AUTHORITY: readonly PolicyRule[] = [
  { verbs: ['*'], apiGroups: ['*'], resources: ['*'], resourceNames: [], nonResourceURLs: [] },
  { verbs: ['*'], apiGroups: [], resources: [], resourceNames: [], nonResourceURLs: ['*'] },
];

/** The registry names a role that does not exist by its resource (`roles.rbac.authorization.k8s.io "x" not found`). */
const notFound = (m: MissingRole): string =>
  `${m.kind === 'Role' ? 'roles' : 'clusterroles'}.${RBAC_GROUP} ${JSON.stringify(m.name)} not found`;

/** Whether `obj` differs from `old` only in what the garbage collector writes (rbac `IsOnlyMutatingGCFields`). */
function onlyGarbageCollectorFields(obj: KubeObject, old: KubeObject): boolean {
  const ignored = new Set(['ownerReferences', 'finalizers', 'managedFields', 'resourceVersion']);
  const strip = (o: KubeObject): unknown => ({
    ...o,
    metadata: Object.fromEntries(Object.entries(o.metadata).filter(([k]) => !ignored.has(k))),
  });
  return isDeepStrictEqual(strip(obj), strip(old));
}

const hasAggregationRule = (o: KubeObject): boolean =>
  (asArray(asObject(o.aggregationRule)?.clusterRoleSelectors) ?? []).length > 0;

export class EscalationCheck {
  constructor(
    private readonly rbac: RbacCache,
    private readonly authorizer: Authorizer,
  ) {}

  /** Throws the 403 when `user` may not write `obj` (`old` is the stored version for an update). */
  check(k: KindInfo, obj: KubeObject, old: KubeObject | undefined, user: UserInfo): void {
    if (k.group !== RBAC_GROUP || user.groups.includes(SYSTEM_MASTERS)) return;
    if (old !== undefined && onlyGarbageCollectorFields(obj, old)) return;
    const namespace = k.namespaced ? (obj.metadata.namespace ?? '') : '';
    const name = obj.metadata.name ?? '';
    const refuse = (why: string): ApiError =>
      new ApiError('Forbidden', `${k.plural}.${RBAC_GROUP} ${JSON.stringify(name)} is forbidden: ${why}`, {
        name,
        group: RBAC_GROUP,
        kind: k.plural,
      });
    if (k.kind === 'Role' || k.kind === 'ClusterRole') {
      // RoleEscalationAuthorized: the request's own name, which a create does not have.
      const escalate = { user, verb: 'escalate', apiGroup: RBAC_GROUP, resource: k.plural, namespace };
      if (this.authorizer.authorize(old === undefined ? escalate : { ...escalate, name }).allowed) return;
      const missing = this.missingRights(user, namespace, policyRulesOf(obj));
      if (missing !== undefined) throw refuse(missing);
      const aggregates = hasAggregationRule(obj) || (old !== undefined && hasAggregationRule(old));
      if (aggregates && this.missingRights(user, '', FULL_AUTHORITY) !== undefined)
        throw refuse('must have cluster-admin privileges to use the aggregationRule');
      return;
    }
    const ref = roleRefOf(obj);
    const bind = { user, verb: 'bind', apiGroup: ref.apiGroup, namespace, name: ref.name };
    const resource = ref.kind === 'Role' ? 'roles' : 'clusterroles';
    if (this.authorizer.authorize({ ...bind, resource }).allowed) return;
    const rules = this.rbac.roleReferenceRules(ref, namespace);
    if (isMissingRole(rules)) throw refuse(notFound(rules));
    const missing = this.missingRights(user, namespace, rules);
    if (missing !== undefined) throw refuse(missing);
  }

  /** rule.go `ConfirmNoEscalation`: undefined when `user` holds `rules` in `namespace`, else why not. */
  private missingRights(user: UserInfo, namespace: string, rules: readonly PolicyRule[]): string | undefined {
    const owner = this.rbac.rulesFor(user, namespace);
    const uncovered = uncoveredRules(owner.rules, rules);
    if (uncovered.length === 0) return undefined;
    const lines = [...new Set(compactRules(uncovered).map(compactString))].sort();
    const resolution =
      owner.missing.length > 0 ? `; resolution errors: [${aggregateErrors(owner.missing.map(notFound))}]` : '';
    return `user ${JSON.stringify(user.username)} (groups=${goQuotedList(user.groups)}) is attempting to grant RBAC permissions not currently held:\n${lines.join('\n')}${resolution}`;
  }
}
