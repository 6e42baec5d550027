import { EventEmitter } from 'node:events';
import { isDeepStrictEqual } from 'node:util';
import type { LocalConfig, LocalWorkload } from './local-config.js';
import { serviceKey, type Endpoint, type Service } from './service.js';
import type { Workload } from './workload.js';
import { failClosedPolicy, policyKey, type Authorization } from './policy.js';
import { WorkloadStore } from './workload-store.js';
import { ServiceStore } from './service-store.js';
import { PolicyStore } from './policy-store.js';
import type { StateChange, WorkloadChange } from './state-change.js';

/**
 * Upserts and removals of individual resources, as one xDS response (or one diff of the local config file) brings
 * them. Workloads are keyed by uid, services by `namespace/hostname`, policies by `namespace/name`.
 */
export interface StateDelta {
  readonly workloads?: readonly LocalWorkload[];
  readonly services?: readonly Service[];
  readonly policies?: readonly Authorization[];
  readonly removedWorkloads?: readonly string[];
  readonly removedServices?: readonly string[];
  readonly removedPolicies?: readonly string[];
}

/**
 * Everything ztunnel knows about the mesh: workloads, services and policies, with the indexes the proxy needs
 * (ztunnel `src/state.rs` `ProxyState`, updated resource by resource as `src/xds.rs` `ProxyStateUpdater` does):
 * workloads by uid, `network/ip` and node; services by `namespace/hostname`, VIP and hostname, with endpoints staged
 * for services not yet known; policies by key and by namespace (`""` holds the Global ones). Each update touches only
 * the resources it names; a resource identical to the one held is not a change. An update that changed something
 * emits `change` with what it changed.
 */
export class ProxyState extends EventEmitter<{ change: [StateChange] }> {
  private readonly workloads = new WorkloadStore();
  private readonly services = new ServiceStore();
  private readonly policies = new PolicyStore();

  constructor() {
    super();
    // Every connection that waits for its local workload to arrive listens here for a while (LocalWorkloadInformation).
    this.setMaxListeners(0);
  }

  /** Applies one batch of upserts and removals; returns what changed (undefined: nothing did). */
  update(d: StateDelta): StateChange | undefined {
    const policies: string[] = [];
    for (const key of d.removedPolicies ?? []) if (this.policies.remove(key)) policies.push(key);
    for (const p of d.policies ?? []) {
      const key = policyKey(p);
      if (isDeepStrictEqual(this.policies.get(key), p)) continue;
      this.policies.insert(key, p);
      policies.push(key);
    }
    const workloads: WorkloadChange[] = [];
    for (const uid of d.removedWorkloads ?? []) {
      const prev = this.workloads.remove(uid);
      if (prev !== undefined) workloads.push(this.endpointsFollow(uid, prev, undefined));
    }
    for (const lw of d.workloads ?? []) {
      const uid = lw.workload.uid;
      if (isDeepStrictEqual(this.workloads.get(uid), lw)) continue;
      workloads.push(this.endpointsFollow(uid, this.workloads.insert(lw), lw));
    }
    for (const key of d.removedServices ?? []) this.services.remove(key);
    for (const s of d.services ?? [])
      if (!isDeepStrictEqual(this.services.definition(serviceKey(s)), s)) this.services.insert(s);
    const services = this.services.flush();
    if (policies.length === 0 && workloads.length === 0 && services.length === 0) return undefined;
    const change: StateChange = { workloads, services, policies };
    this.emit('change', change);
    return change;
  }

  /**
   * Makes the state hold exactly `cfg` (a whole local config file): an update of what differs from what is held,
   * through the same path as xDS deltas.
   */
  apply(cfg: LocalConfig): StateChange | undefined {
    const uids = new Set(cfg.workloads.map((w) => w.workload.uid));
    const services = new Set(cfg.services.map(serviceKey));
    const policies = new Set(cfg.policies.map(policyKey));
    return this.update({
      workloads: cfg.workloads,
      services: cfg.services,
      policies: cfg.policies,
      removedWorkloads: [...this.workloads.values()].map((w) => w.workload.uid).filter((uid) => !uids.has(uid)),
      removedServices: this.services.definedKeys().filter((k) => !services.has(k)),
      removedPolicies: [...this.policies.values()].map(policyKey).filter((k) => !policies.has(k)),
    });
  }

  /** Moves workload `uid`'s endpoints from the services `prev` backed to those `next` backs. */
  private endpointsFollow(
    uid: string,
    prev: LocalWorkload | undefined,
    next: LocalWorkload | undefined,
  ): WorkloadChange {
    for (const key of Object.keys(prev?.services ?? {}))
      if (next === undefined || !Object.hasOwn(next.services, key)) this.services.removeEndpoint(key, uid);
    for (const [key, port] of Object.entries(next?.services ?? {}))
      this.services.upsertEndpoint(key, { workloadUid: uid, port, status: next!.workload.status });
    return { uid, before: prev?.workload, after: next?.workload };
  }

  workloadByUid(uid: string): Workload | undefined {
    return this.workloads.get(uid)?.workload;
  }

  workloadByAddr(network: string, ip: string): Workload | undefined {
    return this.workloads.byAddress(network, ip);
  }

  serviceByKey(key: string): Service | undefined {
    return this.services.get(key);
  }

  /**
   * The service owning a VIP, among those visible to `clientNs`: the client's own namespace first, then a
   * canonical one, then any (ztunnel `get_best_by_vip`).
   */
  serviceByVip(network: string, ip: string, clientNs: string): Service | undefined {
    const all = this.services
      .atVip(`${network}/${ip}`)
      .filter((s) => s.visibility === 'Public' || s.namespace === clientNs);
    return all.find((s) => s.namespace === clientNs) ?? all.find((s) => s.canonical) ?? all[0];
  }

  /** A service by hostname, preferring `preferNs` (the inbound double-HBONE authority form). */
  serviceByHostname(hostname: string, preferNs: string): Service | undefined {
    const all = this.services.withHostname(hostname);
    return all.find((s) => s.namespace === preferNs) ?? all[0];
  }

  /**
   * What a namespaced hostname names (ztunnel `find_hostname`): that namespace's service, else a workload of that
   * namespace with that hostname (a linear scan, as ztunnel does for this rare case).
   */
  byNamespacedHostname(namespace: string, hostname: string): Service | Workload | undefined {
    const svc = this.services.get(serviceKey({ namespace, hostname }));
    if (svc !== undefined) return svc;
    for (const w of this.workloads.values())
      if (w.workload.hostname === hostname && w.workload.namespace === namespace) return w.workload;
    return undefined;
  }

  /** Every service named `hostname`, in any namespace (ztunnel `ServiceStore::get_by_host`). */
  servicesByHostname(hostname: string): readonly Service[] {
    return this.services.withHostname(hostname);
  }

  /** The workloads that run on `node`. */
  workloadsOnNode(node: string): Workload[] {
    return this.workloads.onNode(node);
  }

  /**
   * Policies that apply to `w` (ztunnel `src/state.rs` `assert_rbac`): its namespace's, the Global ones, and those
   * it lists by key. ztunnel skips a listed key it does not have; amesh fails closed instead: istiod lists only
   * policies it sends (istio `pilot/pkg/serviceregistry/ambient/workloads.go` `buildWorkloadPolicies`), so a
   * missing one was rejected or has not arrived yet, and the workload denies until it is there.
   */
  policiesFor(w: Workload): Authorization[] {
    const keys = new Set([
      ...this.policies.keysFor(w.namespace),
      ...this.policies.keysFor(''),
      ...w.authorizationPolicies,
    ]);
    return [...keys].map(
      (k) => this.policies.get(k) ?? failClosedPolicy(k, 'WorkloadSelector', 'named by the workload but not received'),
    );
  }

  /** The state in ztunnel's `/config_dump` shape (top-level `workloads`, `services`, `policies`, `stagedServices`). */
  dump(): {
    workloads: Workload[];
    services: Service[];
    policies: Authorization[];
    stagedServices: Record<string, Record<string, Endpoint>>;
  } {
    return {
      workloads: [...this.workloads.values()].map((w) => w.workload).sort((a, b) => a.uid.localeCompare(b.uid)),
      services: [...this.services.values()].sort((a, b) => serviceKey(a).localeCompare(serviceKey(b))),
      policies: [...this.policies.values()].sort((a, b) => policyKey(a).localeCompare(policyKey(b))),
      stagedServices: this.services.staged(),
    };
  }
}
