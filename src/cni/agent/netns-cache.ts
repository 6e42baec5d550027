/**
 * The node agent's open network namespaces, one fd per pod UID (istio `cni/pkg/nodeagent/pod_cache.go`,
 * `netns_linux.go`): opened from the CNI netns path when a pod is added, or, for pods that were running before
 * the agent started, found by scanning /proc as Istio does (`cni/pkg/nodeagent/podcgroupns_linux.go`). Istio
 * matches a process's cgroup to the pod UID, then checks its netns holds one of the pod's IPs; here the IP check
 * comes first (a process started some other way may carry no pod cgroup): a netns whose addresses include one of
 * the pod's IPs. When several network namespaces hold a pod's IP (a stale sandbox beside the pod's own, or another
 * cluster's pod on the same machine), the one whose processes' cgroups name the pod's UID is taken (a kubelet's
 * cgroup paths do: `pod<uid>`, with `_` for `-` under systemd; amesh up's runc `<uid>-<container>`); when not
 * exactly one does, none is taken, since the wrong one would get the rules and the pod would run uncaptured, and
 * the scan fails for that pod, naming the candidates. Each netns is looked at once (through its oldest process), by its
 * identity (dev, ino). A netns's addresses come from its processes' `/proc/PID/net/fib_trie` (IPv4 local
 * addresses) and `/proc/PID/net/if_inet6`, which the kernel shows for the process's own netns, so the scan needs
 * neither setns nor a child process.
 */
import { closeSync, constants, openSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describeError, MeshError } from '../../lib/errors.js';
import { canonicalUnmappedIp, formatIp } from '../../lib/ip.js';
import { netnsId, sameNetns, type NetnsId } from '../../native/native.js';

/** A pod the /proc scan looks for. */
export interface PodToFind {
  readonly uid: string;
  /** The pod's IPs (status.podIPs); a pod without IPs cannot be matched. */
  readonly ips: readonly string[];
}

interface CachedNetns {
  readonly fd: number;
  readonly id: NetnsId;
}

/** A netns seen in the scan: its oldest process so far. */
interface ScannedNetns {
  pid: string;
  startTime: bigint;
  readonly id: NetnsId;
}

const idKey = (id: NetnsId): string => `${id.dev}:${id.ino}`;

/** Open fds on pods' network namespaces, by pod UID. Every fd is this cache's: it closes them on `remove`/`closeAll`. */
export class PodNetnsCache {
  private readonly byUid = new Map<string, CachedNetns>();
  /** Counts open/remove calls; `changedAt` says when each UID last changed, while a scan runs (it must not undo them). */
  private generation = 0;
  private readonly changedAt = new Map<string, number>();
  private scans = 0;

  /** @param procRoot where /proc is (Istio's agent sees the node's as /host/proc). */
  constructor(private readonly procRoot = '/proc') {}

  /**
   * The fd on the netns at `netnsPath` (a CNI netns path, or `/proc/PID/ns/net`) for pod `uid`, opened now or
   * reused if the cache holds that same netns for it; a different netns for the same UID (its sandbox was
   * recreated) replaces and closes the old one. AGENT_ERR_POD_NETNS when the path cannot be opened or is not a netns.
   */
  open(uid: string, netnsPath: string): number {
    let fd: number;
    try {
      // Non-blocking: a FIFO (or a device) at the path must fail the netns check below, not block the agent in open.
      fd = openSync(netnsPath, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (e) {
      throw new MeshError(
        'AGENT_ERR_POD_NETNS',
        `cannot open network namespace ${netnsPath} of pod ${uid}: ${describeError(e)}`,
        { cause: e },
      );
    }
    let id: NetnsId;
    try {
      id = netnsId(fd);
    } catch (e) {
      closeSync(fd);
      throw new MeshError(
        'AGENT_ERR_POD_NETNS',
        `${netnsPath} of pod ${uid} is not a network namespace: ${describeError(e)}`,
        { cause: e },
      );
    }
    this.changed(uid);
    return this.keep(uid, fd, id);
  }

  /** The cached fd of pod `uid`, if any. */
  get(uid: string): number | undefined {
    return this.byUid.get(uid)?.fd;
  }

  /** The UIDs with a cached netns. */
  uids(): string[] {
    return [...this.byUid.keys()];
  }

  /** Closes and forgets pod `uid`'s fd; false when none was cached. */
  remove(uid: string): boolean {
    this.changed(uid);
    const cached = this.byUid.get(uid);
    if (cached === undefined) return false;
    this.byUid.delete(uid);
    closeSync(cached.fd);
    return true;
  }

  /** Closes every fd (agent shutdown). */
  closeAll(): void {
    for (const uid of this.uids()) this.remove(uid);
  }

  /**
   * Finds, caches and returns the netns fd of each pod in `pods` not cached yet (agent restart: pods already
   * running), by the /proc scan described above. Pods found in no netns (not running, no IPs yet) are left out;
   * the agent's own netns and that of /proc/1 (the host's) are never a pod's. A pod opened or removed while the
   * scan runs keeps what that call did. AGENT_ERR_POD_NETNS, naming the candidates, when more than one netns holds
   * a pod's IPs; the pods found unambiguously are cached (`get`) even then.
   */
  async scanProc(pods: Iterable<PodToFind>): Promise<Map<string, number>> {
    this.scans++;
    const start = this.generation;
    try {
      return await this.scan(pods, start);
    } finally {
      if (--this.scans === 0) this.changedAt.clear();
    }
  }

  private changed(uid: string): void {
    if (this.scans > 0) this.changedAt.set(uid, ++this.generation);
  }

  private async scan(pods: Iterable<PodToFind>, start: number): Promise<Map<string, number>> {
    const wanted = new Map<string, string>();
    for (const pod of pods) {
      if (this.byUid.has(pod.uid)) continue;
      for (const ip of pod.ips) {
        const c = canonicalUnmappedIp(ip);
        if (c !== undefined) wanted.set(c, pod.uid);
      }
    }
    const found = new Map<string, number>();
    if (wanted.size === 0) return found;
    const skip = new Set<string>();
    for (const own of ['self', '1']) {
      const id = tryNetnsId(path.join(this.procRoot, own, 'ns', 'net'));
      if (id !== undefined) skip.add(idKey(id));
    }
    // The oldest process of each netns (its addresses are read through it), then which netns hold each wanted pod's IPs.
    const netnses = new Map<string, ScannedNetns>();
    const members = new Map<string, string[]>();
    let pids: string[];
    try {
      pids = await readdir(this.procRoot);
    } catch (e) {
      throw new MeshError(
        'AGENT_ERR_POD_NETNS',
        `cannot list ${this.procRoot} to find running pods' network namespaces: ${describeError(e)}`,
        { cause: e },
      );
    }
    for (const pid of pids) {
      if (!/^\d+$/.test(pid)) continue;
      const id = tryNetnsId(path.join(this.procRoot, pid, 'ns', 'net'));
      if (id === undefined || skip.has(idKey(id))) continue;
      const startTime = await processStartTime(path.join(this.procRoot, pid, 'stat'));
      if (startTime === undefined) continue;
      members.set(idKey(id), [...(members.get(idKey(id)) ?? []), pid]);
      const seen = netnses.get(idKey(id));
      if (seen === undefined) netnses.set(idKey(id), { pid, startTime, id });
      else if (startTime < seen.startTime) Object.assign(seen, { pid, startTime });
    }
    const candidates = new Map<string, Map<string, ScannedNetns>>();
    for (const [key, ns] of netnses) {
      for (const ip of await netnsAddresses(path.join(this.procRoot, ns.pid, 'net'))) {
        const uid = wanted.get(ip);
        if (uid === undefined) continue;
        const of = candidates.get(uid) ?? new Map<string, ScannedNetns>();
        candidates.set(uid, of.set(key, ns));
      }
    }
    const ambiguous: string[] = [];
    for (const [uid, of] of candidates) {
      const all = [...of.values()];
      let ns = all[0];
      if (all.length > 1) {
        const named: ScannedNetns[] = [];
        for (const n of all) if (await this.cgroupsName(members.get(idKey(n.id)) ?? [], uid)) named.push(n);
        ns = named.length === 1 ? named[0] : undefined;
        if (ns === undefined) {
          ambiguous.push(`pod ${uid} in ${all.map((n) => `netns ${idKey(n.id)} (pid ${n.pid})`).join(', ')}`);
          continue;
        }
      }
      if (ns === undefined) continue;
      // A pod opened or removed during the scan keeps what that call did.
      if ((this.changedAt.get(uid) ?? start) > start || this.byUid.has(uid)) continue;
      const fd = this.openProcNetns(ns);
      if (fd !== undefined) found.set(uid, this.keep(uid, fd, ns.id));
    }
    if (ambiguous.length > 0) {
      throw new MeshError(
        'AGENT_ERR_POD_NETNS',
        `more than one network namespace holds the IPs of ${ambiguous.join('; ')}, and not exactly one has a process whose cgroup names the pod: a stale sandbox? None is taken, so the pod is not captured in the wrong one`,
      );
    }
    return found;
  }

  /** Whether the cgroup of one of `pids` names pod `uid` (with `-` or `_` between its groups). */
  private async cgroupsName(pids: readonly string[], uid: string): Promise<boolean> {
    const wanted = uid.toLowerCase();
    for (const pid of pids) {
      const text = await readFile(path.join(this.procRoot, pid, 'cgroup'), 'utf8').catch(() => '');
      if (text.toLowerCase().replaceAll('_', '-').includes(wanted)) return true;
    }
    return false;
  }

  /** Opens `/proc/PID/ns/net` of a scanned process, or undefined if that PID now is another netns (it exited). */
  private openProcNetns(ns: ScannedNetns): number | undefined {
    let fd: number;
    try {
      fd = openSync(path.join(this.procRoot, ns.pid, 'ns', 'net'), 'r');
    } catch {
      return undefined;
    }
    const id = tryNetnsId(fd);
    if (id !== undefined && sameNetns(id, ns.id)) return fd;
    closeSync(fd);
    return undefined;
  }

  private keep(uid: string, fd: number, id: NetnsId): number {
    const cached = this.byUid.get(uid);
    if (cached !== undefined && sameNetns(cached.id, id)) {
      closeSync(fd);
      return cached.fd;
    }
    if (cached !== undefined) closeSync(cached.fd);
    this.byUid.set(uid, { fd, id });
    return fd;
  }
}

function tryNetnsId(ref: string | number): NetnsId | undefined {
  try {
    return netnsId(ref);
  } catch {
    return undefined;
  }
}

/** Field 22 of /proc/PID/stat (start time in clock ticks after boot), read after the command's closing paren. */
async function processStartTime(statFile: string): Promise<bigint | undefined> {
  let stat: string;
  try {
    stat = await readFile(statFile, 'utf8');
  } catch {
    return undefined;
  }
  const field = stat
    .slice(stat.lastIndexOf(')') + 1)
    .trim()
    .split(/\s+/)[19];
  return field !== undefined && /^\d+$/.test(field) ? BigInt(field) : undefined;
}

/** The local addresses of a netns from its `/proc/PID/net`: IPv4 `/32 host LOCAL` leaves of fib_trie, and if_inet6. */
async function netnsAddresses(procNet: string): Promise<Set<string>> {
  const out = new Set<string>();
  const read = (file: string): Promise<string> => readFile(path.join(procNet, file), 'utf8').catch(() => '');
  let leaf: string | undefined;
  for (const line of (await read('fib_trie')).split('\n')) {
    const l = /^\s*\|-- (\S+)/.exec(line);
    if (l !== null) leaf = l[1];
    else if (leaf !== undefined && /^\s*\/32 host LOCAL/.test(line)) out.add(leaf);
  }
  for (const line of (await read('if_inet6')).split('\n')) {
    const hex = line.split(' ')[0] ?? '';
    const ip = /^[0-9a-f]{32}$/.test(hex) ? formatIp(Buffer.from(hex, 'hex')) : undefined;
    if (ip !== undefined) out.add(ip);
  }
  return out;
}
