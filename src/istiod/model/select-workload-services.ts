import type { Resource } from '../registry/manifest-dir.js';
import type { HostOwner, ServiceSelection } from './service-selection.js';
import { serviceEntryHosts, serviceHostname } from './services.js';

/**
 * A missing `creationTimestamp` (a hand-written manifest) is the oldest possible, as Go's zero `time.Time` is.
 * Equal times are ordered by name, then namespace, the consistent order istio `pilot/pkg/model/push_context.go`
 * `SortServicesByCreationTime` uses, so the result never depends on file order.
 */
function older(a: HostOwner, b: HostOwner): boolean {
  const t = (m: HostOwner): number =>
    m.metadata.creationTimestamp === undefined ? Number.NEGATIVE_INFINITY : Date.parse(m.metadata.creationTimestamp);
  if (t(a) !== t(b)) return t(a) < t(b);
  if (a.metadata.name !== b.metadata.name) return a.metadata.name < b.metadata.name;
  return a.metadata.namespace < b.metadata.namespace;
}

/** `a` beats `b`: a Kubernetes Service always wins; otherwise the older ServiceEntry. */
const better = (a: HostOwner, b: HostOwner): boolean => b.kind !== 'Service' && (a.kind === 'Service' || older(a, b));

/** Which of `objects` serves each hostname they claim (the rules: service-selection.ts). */
export function selectWorkloadServices(objects: readonly Resource[], domain: string): ServiceSelection {
  const byHost = new Map<string, HostOwner[]>();
  const add = (host: string, o: HostOwner): void => {
    const list = byHost.get(host);
    if (list === undefined) byHost.set(host, [o]);
    else list.push(o);
  };
  for (const o of objects) {
    if (o.kind === 'Service' && o.spec.type !== 'ExternalName') add(serviceHostname(o, domain), o);
    else if (o.kind === 'ServiceEntry') for (const h of new Set(serviceEntryHosts(o))) add(h, o);
  }
  /** `namespace/hostname` → winner; hostname → canonical winner. */
  const winners = new Map<string, HostOwner>();
  const canonical = new Map<string, HostOwner>();
  const shadowed: { owner: HostOwner; hostname: string; by: HostOwner }[] = [];
  for (const [host, owners] of byHost) {
    const best = new Map<string, HostOwner>();
    for (const o of owners) {
      const cur = best.get(o.metadata.namespace);
      if (cur === undefined || better(o, cur)) best.set(o.metadata.namespace, o);
    }
    let top: HostOwner | undefined;
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
