import { EventEmitter } from 'node:events';
import type { LocalConfig } from './local-config.js';
import { serviceKey, type Endpoint, type Service } from './service.js';
import type { Workload } from './workload.js';
import { failClosedPolicy, policyKey, type Authorization } from './policy.js';

/**
 * Everything ztunnel knows about the mesh: workloads, services and policies, with the indexes the proxy
 * needs (as ztunnel's `src/state.rs` `ProxyState`): workload by uid and by `network/ip`, service by `namespace/hostname` and by VIP,
 * policies by key and by namespace (`""` holds the Global ones). A new config replaces the whole state in one
 * step and emits `change`.
 */
export class ProxyState extends EventEmitter<{ change: [] }> {
  private workloads = new Map<string, Workload>();
  private workloadsByAddr = new Map<string, Workload>();
  private services = new Map<string, Service>();
  private servicesByVip = new Map<string, Service[]>();
  private policies = new Map<string, Authorization>();
  private policiesByNs = new Map<string, string[]>();
  /** Endpoints of services not (yet) defined, kept so they attach when the service arrives. */
  private stagedServices = new Map<string, Record<string, Endpoint>>();
  /** Bumped on every applied config. */
  generation = 0;

  apply(cfg: LocalConfig): void {
    const workloads = new Map<string, Workload>();
    const byAddr = new Map<string, Workload>();
    for (const { workload } of cfg.workloads) {
      workloads.set(workload.uid, workload);
      for (const ip of workload.workloadIps) byAddr.set(`${workload.network}/${ip}`, workload);
    }
    const endpoints = new Map<string, Record<string, Endpoint>>();
    for (const { workload, services } of cfg.workloads) {
      for (const [key, port] of Object.entries(services)) {
        const m = endpoints.get(key) ?? {};
        m[workload.uid] = { workloadUid: workload.uid, port, status: workload.status };
        endpoints.set(key, m);
      }
    }
    const services = new Map<string, Service>();
    const byVip = new Map<string, Service[]>();
    for (const s of cfg.services) {
      const key = serviceKey(s);
      const merged: Service = { ...s, endpoints: { ...s.endpoints, ...(endpoints.get(key) ?? {}) } };
      endpoints.delete(key);
      services.set(key, merged);
      for (const vip of s.vips) byVip.set(vip, [...(byVip.get(vip) ?? []), merged]);
    }
    const policies = new Map<string, Authorization>();
    const byNs = new Map<string, string[]>();
    for (const p of cfg.policies) {
      const key = policyKey(p);
      policies.set(key, p);
      if (p.scope === 'Global' || p.scope === 'Namespace') {
        const ns = p.scope === 'Global' ? '' : p.namespace;
        byNs.set(ns, [...(byNs.get(ns) ?? []), key]);
      }
    }
    this.workloads = workloads;
    this.workloadsByAddr = byAddr;
    this.services = services;
    this.servicesByVip = byVip;
    this.policies = policies;
    this.policiesByNs = byNs;
    this.stagedServices = endpoints;
    this.generation++;
    this.emit('change');
  }

  workloadByUid(uid: string): Workload | undefined {
    return this.workloads.get(uid);
  }

  workloadByAddr(network: string, ip: string): Workload | undefined {
    return this.workloadsByAddr.get(`${network}/${ip}`);
  }

  serviceByKey(key: string): Service | undefined {
    return this.services.get(key);
  }

  /**
   * The service owning a VIP, among those visible to `clientNs`: the client's own namespace first, then a
   * canonical one, then any (ztunnel `get_best_by_vip`).
   */
  serviceByVip(network: string, ip: string, clientNs: string): Service | undefined {
    const all = (this.servicesByVip.get(`${network}/${ip}`) ?? []).filter((s) => s.visibility === 'Public' || s.namespace === clientNs);
    return all.find((s) => s.namespace === clientNs) ?? all.find((s) => s.canonical) ?? all[0];
  }

  /** A service by hostname, preferring `preferNs` (inbound double-HBONE authority form, spec §4.6). */
  serviceByHostname(hostname: string, preferNs: string): Service | undefined {
    let found: Service | undefined;
    for (const s of this.services.values()) {
      if (s.hostname !== hostname) continue;
      if (s.namespace === preferNs) return s;
      found ??= s;
    }
    return found;
  }

  /** The workloads that run on `node`. */
  workloadsOnNode(node: string): Workload[] {
    return [...this.workloads.values()].filter((w) => w.node === node);
  }

  /**
   * Policies that apply to `w` (ztunnel `src/state.rs` `assert_rbac`): its namespace's, the Global ones, and those
   * it lists by key. ztunnel skips a listed key it does not have; amesh fails closed instead: istiod lists only
   * policies it sends (istio `pilot/pkg/serviceregistry/ambient/workloads.go` `buildWorkloadPolicies`), so a
   * missing one was rejected or has not arrived yet, and the workload denies until it is there.
   */
  policiesFor(w: Workload): Authorization[] {
    const keys = [...(this.policiesByNs.get(w.namespace) ?? []), ...(this.policiesByNs.get('') ?? []), ...w.authorizationPolicies];
    const out: Authorization[] = [];
    const seen = new Set<string>();
    for (const k of keys) {
      if (seen.has(k)) continue;
      seen.add(k);
      out.push(this.policies.get(k) ?? failClosedPolicy(k, 'WorkloadSelector', 'named by the workload but not received'));
    }
    return out;
  }

  /** The state in ztunnel's `/config_dump` shape (top-level `workloads`, `services`, `policies`, `stagedServices`). */
  dump(): { workloads: Workload[]; services: Service[]; policies: Authorization[]; stagedServices: Record<string, Record<string, Endpoint>> } {
    return {
      workloads: [...this.workloads.values()].sort((a, b) => a.uid.localeCompare(b.uid)),
      services: [...this.services.values()].sort((a, b) => serviceKey(a).localeCompare(serviceKey(b))),
      policies: [...this.policies.values()].sort((a, b) => policyKey(a).localeCompare(policyKey(b))),
      stagedServices: Object.fromEntries(this.stagedServices),
    };
  }
}
