import type { Workload } from './workload.js';

/** One workload inserted (`before` undefined), replaced, or removed (`after` undefined). */
export interface WorkloadChange {
  readonly uid: string;
  readonly before: Workload | undefined;
  readonly after: Workload | undefined;
}

/** What one applied update changed; ProxyState's `change` event carries it. Never empty. */
export interface StateChange {
  readonly workloads: readonly WorkloadChange[];
  /** Keys of services whose record changed: definition, VIPs or endpoints (including staged endpoints). */
  readonly services: readonly string[];
  /** Keys of policies inserted, replaced or removed. */
  readonly policies: readonly string[];
}

/** Whether a workload that runs on `node` was inserted, replaced or removed: its listeners may need to follow. */
export function changesWorkloadsOn(c: StateChange, node: string): boolean {
  return c.workloads.some((w) => w.before?.node === node || w.after?.node === node);
}

/**
 * Whether the change can alter the policy decision for a live connection on `node`, so live connections must be
 * re-checked. A decision depends on the policies and on the destination workload's policy lookup: its namespace
 * (Namespace-scoped policies) and its `authorizationPolicies` list, which is what ztunnel's `src/state.rs`
 * `assert_rbac` reads; the source side is fixed when the connection is made (peer address and certificate identity).
 *
 * ztunnel re-checks live connections only when Authorization resources change (`src/proxy/connection_manager.rs`
 * `PolicyWatcher`, woken by `src/xds.rs`). amesh also re-checks when a local workload's policy lookup changes:
 * when a WorkloadSelector policy starts selecting a relabelled pod, istiod sends only the workload (the
 * Authorization carries no selector, so it is unchanged), and a DENY that now applies must close what it denies.
 * A local workload that left the node, or whose identity or addresses changed, has its listeners and connections
 * closed by the workload proxies instead.
 */
export function mayAlterPolicyDecision(c: StateChange, node: string): boolean {
  if (c.policies.length > 0) return true;
  return c.workloads.some(
    ({ before, after }) => (before?.node === node || after?.node === node) && !samePolicyLookup(before, after),
  );
}

function samePolicyLookup(a: Workload | undefined, b: Workload | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.namespace === b.namespace &&
    a.authorizationPolicies.length === b.authorizationPolicies.length &&
    a.authorizationPolicies.every((k, i) => b.authorizationPolicies[i] === k)
  );
}
