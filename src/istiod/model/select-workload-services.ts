import type { Manifest } from '../registry/manifest-dir.js';
import { serviceEntryHosts, serviceHostname } from './services.js';

/**
 * Which object serves a hostname, as istio `pilot/pkg/serviceregistry/ambient/services.go`
 * `selectWorkloadServices` resolves the Services and ServiceEntries that share one: in each namespace one winner,
 * a Kubernetes Service if there is one, else the oldest ServiceEntry; of the winners across namespaces one is
 * canonical, the Kubernetes Service if there is one, else the oldest. A ServiceEntry that loses a host sends
 * neither that Service nor workloads for it.
 */
export interface ServiceSelection {
  /** `owner` won `hostname` in its namespace. */
  serves(owner: Manifest, hostname: string): boolean;
  /** `owner`'s service for `hostname` is the one canonical service of that hostname. */
  isCanonical(owner: Manifest, hostname: string): boolean;
  /** ServiceEntry hosts that lost, with the object that won their namespace. */
  readonly shadowed: readonly { readonly owner: Manifest; readonly hostname: string; readonly by: Manifest }[];
}

/**
 * A missing `creationTimestamp` (a hand-written manifest) is the oldest possible, as Go's zero `time.Time` is.
 * Equal times are ordered by name, then namespace, the consistent order istio `pilot/pkg/model/push_context.go`
 * `SortServicesByCreationTime` uses, so the result never depends on file order.
 */
function older(a: Manifest, b: Manifest): boolean {
  const t = (m: Manifest): number =>
    m.metadata.creationTimestamp === undefined ? Number.NEGATIVE_INFINITY : Date.parse(m.metadata.creationTimestamp);
  if (t(a) !== t(b)) return t(a) < t(b);
  if (a.metadata.name !== b.metadata.name) return a.metadata.name < b.metadata.name;
  return a.metadata.namespace < b.metadata.namespace;
}

/** `a` beats `b`: a Kubernetes Service always wins; otherwise the older ServiceEntry. */
const better = (a: Manifest, b: Manifest): boolean => b.kind !== 'Service' && (a.kind === 'Service' || older(a, b));

export function selectWorkloadServices(objects: readonly Manifest[], domain: string): ServiceSelection {
  const byHost = new Map<string, Manifest[]>();
  const add = (host: string, o: Manifest): void => {
    const list = byHost.get(host);
    if (list === undefined) byHost.set(host, [o]);
    else list.push(o);
  };
  for (const o of objects) {
    if (o.kind === 'Service' && o.spec['type'] !== 'ExternalName') add(serviceHostname(o, domain), o);
    else if (o.kind === 'ServiceEntry') for (const h of new Set(serviceEntryHosts(o))) add(h, o);
  }
  /** `namespace/hostname` → winner; hostname → canonical winner. */
  const winners = new Map<string, Manifest>();
  const canonical = new Map<string, Manifest>();
  const shadowed: { owner: Manifest; hostname: string; by: Manifest }[] = [];
  for (const [host, owners] of byHost) {
    const best = new Map<string, Manifest>();
    for (const o of owners) {
      const cur = best.get(o.metadata.namespace);
      if (cur === undefined || better(o, cur)) best.set(o.metadata.namespace, o);
    }
    let top: Manifest | undefined;
    for (const [ns, o] of best) {
      winners.set(`${ns}/${host}`, o);
      if (top === undefined || better(o, top)) top = o;
    }
    if (top !== undefined) canonical.set(host, top);
    for (const o of owners) {
      const by = best.get(o.metadata.namespace)!;
      if (by !== o) shadowed.push({ owner: o, hostname: host, by });
    }
  }
  return {
    serves: (owner, hostname) => winners.get(`${owner.metadata.namespace}/${hostname}`) === owner,
    isCanonical: (owner, hostname) => canonical.get(hostname) === owner,
    shadowed,
  };
}
