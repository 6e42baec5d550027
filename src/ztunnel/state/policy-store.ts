import type { Authorization } from './policy.js';

/**
 * Policies by key (`namespace/name`, the xDS resource name) and, for the Global and Namespace scopes, by the
 * namespace they apply to (`""` for Global), as ztunnel's `src/state/policy.rs` `PolicyStore`. An insert first
 * removes what the key held, so a policy whose scope or namespace changed leaves its old namespace.
 */
export class PolicyStore {
  private readonly byKey = new Map<string, Authorization>();
  private readonly byNamespace = new Map<string, Set<string>>();

  get(key: string): Authorization | undefined {
    return this.byKey.get(key);
  }

  /** Keys of the policies that apply to every workload of `namespace` (`""`: the Global ones). */
  keysFor(namespace: string): ReadonlySet<string> {
    return this.byNamespace.get(namespace) ?? EMPTY;
  }

  values(): IterableIterator<Authorization> {
    return this.byKey.values();
  }

  insert(key: string, p: Authorization): void {
    this.remove(key);
    this.byKey.set(key, p);
    const ns = scopeNamespace(p);
    if (ns === undefined) return;
    let keys = this.byNamespace.get(ns);
    if (keys === undefined) this.byNamespace.set(ns, (keys = new Set<string>()));
    keys.add(key);
  }

  /** Returns whether `key` was held. */
  remove(key: string): boolean {
    const prev = this.byKey.get(key);
    if (prev === undefined) return false;
    this.byKey.delete(key);
    const ns = scopeNamespace(prev);
    const keys = ns === undefined ? undefined : this.byNamespace.get(ns);
    keys?.delete(key);
    if (keys?.size === 0) this.byNamespace.delete(ns!);
    return true;
  }
}

const EMPTY: ReadonlySet<string> = new Set();

/** The namespace a policy is indexed under (`""` for Global); none for a WorkloadSelector policy. */
function scopeNamespace(p: Authorization): string | undefined {
  if (p.scope === 'Global') return '';
  return p.scope === 'Namespace' ? p.namespace : undefined;
}
