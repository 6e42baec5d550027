/**
 * The ClusterRole aggregation controller (kubernetes pkg/controller/clusterroleaggregation), which
 * kube-controller-manager runs and the embedded API server runs itself, as it does the garbage collector: a
 * ClusterRole with an `aggregationRule` gets as its rules every distinct rule of the ClusterRoles its selectors
 * match (by name, itself excluded), rewritten whenever any ClusterRole changes. This is how `admin`, `edit` and
 * `view` get their rules from `system:aggregate-to-*`, and how a CustomResourceDefinition's installer extends them.
 */
import type { Logger } from '../../lib/log.js';
import { ApiError } from '../api-error.js';
import type { ResourceStore } from '../resource-store.js';
import { objectsOf } from '../validation/json-fields.js';
import { selectorMatches } from '../validation/label-selector.js';
import { CLUSTER_ROLES, type CachedRole, type RbacCache } from './rbac-cache.js';
import { policyRulesOf, ruleJson, sameRule, type PolicyRule } from './policy-rule.js';

/** The rules `target` gathers from `roles` by its aggregation rule, or undefined when it has none. */
export function aggregatedRules(target: CachedRole, roles: readonly CachedRole[]): PolicyRule[] | undefined {
  const rule = target.object.aggregationRule;
  if (rule === undefined || rule === null) return undefined;
  const gathered: PolicyRule[] = [];
  for (const selector of objectsOf((rule as { clusterRoleSelectors?: unknown }).clusterRoleSelectors))
    for (const role of roles) {
      if (role.object.metadata.name === target.object.metadata.name) continue;
      if (!selectorMatches(selector, role.object.metadata.labels ?? {})) continue;
      for (const r of role.rules) if (!gathered.some((g) => sameRule(g, r))) gathered.push(r);
    }
  return gathered;
}

/** Start-up passes before the roles must have settled: aggregation chains in practice are two deep. */
const SETTLING_PASSES = 8;

export class ClusterRoleAggregation {
  private scheduled = false;
  private running: Promise<void> = Promise.resolve();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly store: ResourceStore,
    private readonly rbac: RbacCache,
    private readonly log: Logger,
  ) {}

  /**
   * Aggregates until nothing changes (an aggregated role may gather from another: `admin` from `edit`, `edit` from
   * `view`), then again after every ClusterRole change.
   */
  async start(): Promise<void> {
    for (let pass = 0; pass < SETTLING_PASSES && (await this.sync()); pass++);
    this.unsubscribe = this.rbac.onChange((kind) => {
      if (kind === 'ClusterRole') this.schedule();
    });
  }

  stop(): Promise<void> {
    this.unsubscribe?.();
    return this.running;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    this.running = this.running.then(() => {
      this.scheduled = false;
      return this.sync().then(() => undefined);
    });
  }

  /** One pass over every aggregated ClusterRole; true when it rewrote one. */
  private async sync(): Promise<boolean> {
    let wrote = false;
    const roles = this.rbac.allClusterRoles();
    for (const target of roles) {
      const rules = aggregatedRules(target, roles);
      if (rules === undefined) continue;
      const current = policyRulesOf(target.object);
      if (rules.length === current.length && rules.every((r, i) => sameRule(r, current[i]!))) continue;
      const name = target.object.metadata.name ?? '';
      try {
        await this.store.mutate(CLUSTER_ROLES, undefined, name, (o) => {
          o.rules = rules.map(ruleJson);
        });
        wrote = true;
        this.log.debug({ clusterrole: name, rules: rules.length }, 'aggregated a ClusterRole');
      } catch (e) {
        if (e instanceof ApiError && e.reason === 'NotFound') continue;
        this.log.error({ clusterrole: name, err: String(e) }, 'cannot write an aggregated ClusterRole');
      }
    }
    return wrote;
  }
}
