import type { LocalWorkload } from './local-config.js';
import type { Workload } from './workload.js';

/**
 * Workloads by uid, by `network/ip` and by node (ztunnel `src/state/workload.rs` `WorkloadStore`). Several workloads
 * may claim one address; lookups then prefer a Pod, then an HBONE workload, then the latest inserted, as ztunnel's
 * `WorkloadByAddr::get` ranks them. A host-network workload is not indexed by address: its IP is its node's, shared
 * by everything on that node, so an address never names it (as ztunnel's `insert` skips `NetworkMode::HostNetwork`).
 * An insert first removes what the uid held, so an address or node the workload left no longer finds it.
 */
export class WorkloadStore {
  private readonly byUid = new Map<string, LocalWorkload>();
  private readonly byAddr = new Map<string, Workload[]>();
  private readonly byNode = new Map<string, Map<string, Workload>>();

  get(uid: string): LocalWorkload | undefined {
    return this.byUid.get(uid);
  }

  byAddress(network: string, ip: string): Workload | undefined {
    const all = this.byAddr.get(`${network}/${ip}`);
    if (all === undefined) return undefined;
    let best = all[0];
    for (const w of all) if (rank(w) >= rank(best!)) best = w;
    return best;
  }

  onNode(node: string): Workload[] {
    return [...(this.byNode.get(node)?.values() ?? [])];
  }

  values(): IterableIterator<LocalWorkload> {
    return this.byUid.values();
  }

  /** Inserts or replaces `lw`; returns what the uid held before. */
  insert(lw: LocalWorkload): LocalWorkload | undefined {
    const prev = this.remove(lw.workload.uid);
    const w = lw.workload;
    this.byUid.set(w.uid, lw);
    for (const ip of addressed(w)) {
      const k = `${w.network}/${ip}`;
      const at = this.byAddr.get(k);
      if (at === undefined) this.byAddr.set(k, [w]);
      else at.push(w);
    }
    let node = this.byNode.get(w.node);
    if (node === undefined) this.byNode.set(w.node, (node = new Map<string, Workload>()));
    node.set(w.uid, w);
    return prev;
  }

  /** Removes the workload `uid` from every index; returns it, or undefined if it was not held. */
  remove(uid: string): LocalWorkload | undefined {
    const prev = this.byUid.get(uid);
    if (prev === undefined) return undefined;
    this.byUid.delete(uid);
    const w = prev.workload;
    for (const ip of addressed(w)) {
      const k = `${w.network}/${ip}`;
      const rest = (this.byAddr.get(k) ?? []).filter((x) => x.uid !== uid);
      if (rest.length === 0) this.byAddr.delete(k);
      else this.byAddr.set(k, rest);
    }
    const node = this.byNode.get(w.node);
    node?.delete(uid);
    if (node?.size === 0) this.byNode.delete(w.node);
    return prev;
  }
}

/** The IPs `w` is found by: none for a host-network workload. */
function addressed(w: Workload): readonly string[] {
  return w.networkMode === 'HostNetwork' ? [] : w.workloadIps;
}

/** ztunnel's preference among workloads sharing an address: Pods are not spoofable, HBONE ones carry more context. */
function rank(w: Workload): number {
  return (w.uid.includes('//Pod/') ? 2 : 0) + (w.protocol === 'HBONE' ? 1 : 0);
}
