import { isDeepStrictEqual } from 'node:util';
import { serviceKey, type Endpoint, type Service } from './service.js';

/**
 * Services by `namespace/hostname`, by VIP and by hostname (ztunnel `src/state/service.rs` `ServiceStore`), with the
 * endpoints workloads contribute. A service's record is its definition plus the endpoints of the workloads that
 * name it; endpoints of a service not (yet) defined are staged and attach when it arrives. Changes are batched:
 * `flush()` rebuilds each touched service once, as ztunnel's `EndpointAccumulator` does per push.
 *
 * Unlike ztunnel, removing a service keeps its workloads' endpoints staged: they come from workloads still held,
 * and a service defined again finds them without waiting for every workload to be sent again.
 */
export class ServiceStore {
  private readonly definitions = new Map<string, Service>();
  private readonly endpoints = new Map<string, Map<string, Endpoint>>();
  private readonly services = new Map<string, Service>();
  private readonly byVip = new Map<string, Service[]>();
  private readonly byHost = new Map<string, Service[]>();
  private readonly dirty = new Set<string>();

  get(key: string): Service | undefined {
    return this.services.get(key);
  }

  definition(key: string): Service | undefined {
    return this.definitions.get(key);
  }

  atVip(vip: string): readonly Service[] {
    return this.byVip.get(vip) ?? NONE;
  }

  withHostname(hostname: string): readonly Service[] {
    return this.byHost.get(hostname) ?? NONE;
  }

  values(): IterableIterator<Service> {
    return this.services.values();
  }

  /** Keys of the services defined (not those only staged). */
  definedKeys(): string[] {
    return [...this.definitions.keys()];
  }

  /** Endpoints of services not defined, by service key (ztunnel's `staged_services`). */
  staged(): Record<string, Record<string, Endpoint>> {
    const out: Record<string, Record<string, Endpoint>> = {};
    for (const [key, eps] of this.endpoints) if (!this.definitions.has(key)) out[key] = Object.fromEntries(eps);
    return out;
  }

  insert(def: Service): void {
    const key = serviceKey(def);
    this.definitions.set(key, def);
    this.dirty.add(key);
  }

  /** Returns whether `key` was defined. */
  remove(key: string): boolean {
    if (!this.definitions.delete(key)) return false;
    this.dirty.add(key);
    return true;
  }

  upsertEndpoint(key: string, ep: Endpoint): void {
    let eps = this.endpoints.get(key);
    if (eps === undefined) this.endpoints.set(key, (eps = new Map<string, Endpoint>()));
    if (isDeepStrictEqual(eps.get(ep.workloadUid), ep)) return;
    eps.set(ep.workloadUid, ep);
    this.dirty.add(key);
  }

  removeEndpoint(key: string, uid: string): void {
    const eps = this.endpoints.get(key);
    if (eps?.delete(uid) !== true) return;
    if (eps.size === 0) this.endpoints.delete(key);
    this.dirty.add(key);
  }

  /** Rebuilds and re-indexes every service touched since the last flush; returns their keys. */
  flush(): string[] {
    const keys = [...this.dirty];
    this.dirty.clear();
    for (const key of keys) {
      const prev = this.services.get(key);
      const def = this.definitions.get(key);
      const eps = this.endpoints.get(key);
      const next =
        def === undefined
          ? undefined
          : { ...def, endpoints: eps === undefined ? def.endpoints : { ...def.endpoints, ...Object.fromEntries(eps) } };
      if (next === undefined) this.services.delete(key);
      else this.services.set(key, next);
      reindex(this.byVip, key, prev?.vips ?? NONE, next?.vips ?? NONE, next);
      reindex(
        this.byHost,
        key,
        prev === undefined ? NONE : [prev.hostname],
        next === undefined ? NONE : [next.hostname],
        next,
      );
    }
    return keys;
  }
}

const NONE: readonly never[] = [];

/** Moves service `key` from the entries `before` to `after` of `index`, keeping its slot where it stays. */
function reindex(
  index: Map<string, Service[]>,
  key: string,
  before: readonly string[],
  after: readonly string[],
  next: Service | undefined,
): void {
  for (const k of before) {
    if (after.includes(k)) continue;
    const rest = (index.get(k) ?? []).filter((s) => serviceKey(s) !== key);
    if (rest.length === 0) index.delete(k);
    else index.set(k, rest);
  }
  if (next === undefined) return;
  for (const k of after) {
    const at = index.get(k);
    if (at === undefined) {
      index.set(k, [next]);
      continue;
    }
    const i = at.findIndex((s) => serviceKey(s) === key);
    if (i < 0) at.push(next);
    else at[i] = next;
  }
}
