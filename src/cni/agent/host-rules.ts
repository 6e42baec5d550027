/**
 * The node-side rules for kubelet's probes (istio `cni/pkg/iptables/iptables.go` AppendHostRules, golden
 * `cni/pkg/iptables/testdata/hostprobe.golden`; istio `cni/pkg/ipset/`, `cni/pkg/nodeagent/meshdataplane_linux.go`):
 * the ipsets `istio-inpod-probes-v4` / `-v6` (hash:ip, each entry's comment the UID of the pod whose IP it is) and
 * nat `ISTIO_POSTRT`, which SNATs TCP from a local socket (kubelet, not forwarded traffic) to an enrolled pod's IP
 * to 169.254.7.127, a source the pod's rules let through uncaptured. They live in the network namespace the node
 * agent runs in (ipsets are per namespace). Istio drives ipset over netlink; the `ipset` tool does the same here,
 * with every change to a set in one `ipset restore`.
 */
import net from 'node:net';
import { MeshError } from '../../lib/errors.js';
import { canonicalUnmappedIp } from '../../lib/ip.js';
import type { NetnsRef } from '../../native/native.js';
import { SerialQueue } from './serial-queue.js';
import { IptablesRules, replaceChains, type IpFamily } from './iptables-rules.js';
import { mustRunInNetns } from './netns-command.js';
import { checkProbeSnatIps, DEFAULT_POD_RULES_CONFIG, type PodRulesConfig } from './pod-rules.js';

/** Istio's names (istio `cni/pkg/config` ProbeIPSet, `cni/pkg/ipset` V4Name / V6Name, ChainHostPostrouting). */
export const PROBE_IPSET_V4 = 'istio-inpod-probes-v4';
export const PROBE_IPSET_V6 = 'istio-inpod-probes-v6';
const CHAIN_HOST_POSTROUTING = 'ISTIO_POSTRT';

/** The settings the host rules share with the pod rules (Istio's one AmbientConfig serves both). */
export type HostProbeRulesConfig = Pick<PodRulesConfig, 'ipv6' | 'hostProbeSnatIp' | 'hostProbeSnatIpv6'>;

/** One address in the probe sets, with the UID of its pod. */
export interface ProbeIpEntry {
  readonly ip: string;
  readonly uid: string;
}

/** A Kubernetes UID as an ipset comment may hold it (ipset refuses `"`; a comment is at most 255 bytes). */
const POD_UID = /^[A-Za-z0-9._:-]{1,255}$/;

function hostRules(config: HostProbeRulesConfig, family: IpFamily): IptablesRules {
  const set = family === 4 ? PROBE_IPSET_V4 : PROBE_IPSET_V6;
  const snat = family === 4 ? config.hostProbeSnatIp : config.hostProbeSnatIpv6;
  return new IptablesRules()
    .insert('nat', 'POSTROUTING', 1, '-j', CHAIN_HOST_POSTROUTING)
    .append(
      'nat',
      CHAIN_HOST_POSTROUTING,
      '-m',
      'owner',
      '--socket-exists',
      '-p',
      'tcp',
      '-m',
      'set',
      '--match-set',
      set,
      'dst',
      '-j',
      'SNAT',
      '--to-source',
      snat,
    );
}

/** The `iptables-restore` / `ip6tables-restore` input of the host rules; `v6` is undefined unless `config.ipv6`. */
export function renderHostRules(config: HostProbeRulesConfig): { v4: string; v6: string | undefined } {
  return { v4: hostRules(config, 4).restoreText(), v6: config.ipv6 ? hostRules(config, 6).restoreText() : undefined };
}

const isHostChain = (chain: string): boolean => chain === CHAIN_HOST_POSTROUTING;
/** The sets and the chain are one shared state: every call waits in the same queue. */
const ONE_QUEUE = 'host';

/**
 * The probe rules and sets in one network namespace: `netns` (a path or fd), or by default the one this process
 * runs in. Failures are AGENT_ERR_HOST_RULES naming the namespace and quoting the tool's stderr. Every call runs
 * after the ones before it: addPod, removePod and prune read the sets, then write them, and two at once would undo
 * each other.
 */
export class HostProbeRules {
  private readonly families: readonly IpFamily[];
  private readonly queue = new SerialQueue();

  constructor(
    readonly config: HostProbeRulesConfig = DEFAULT_POD_RULES_CONFIG,
    readonly netns?: NetnsRef,
  ) {
    checkProbeSnatIps('AGENT_ERR_HOST_RULES', config);
    this.families = config.ipv6 ? [4, 6] : [4];
  }

  /**
   * Creates the sets (keeping the entries they already have, so a restarted agent can prune instead of losing
   * them) and the SNAT chain with its jump, first in nat POSTROUTING; an `ISTIO_POSTRT` left by an earlier run is
   * replaced in the same transaction, so creating again ends with exactly one and probes are never left unSNATed.
   */
  create(): Promise<void> {
    return this.queue.run(ONE_QUEUE, () => this.createNow());
  }

  private async createNow(): Promise<void> {
    for (const family of this.families) {
      await this.ipset([
        'create',
        setName(family),
        'hash:ip',
        'family',
        family === 4 ? 'inet' : 'inet6',
        'comment',
        '-exist',
      ]);
      await replaceChains('AGENT_ERR_HOST_RULES', this.netns, family, isHostChain, hostRules(this.config, family));
    }
  }

  /** Deletes the chains, their jumps and the sets, whichever exist (agent shutdown when its DaemonSet is gone). */
  delete(): Promise<void> {
    return this.queue.run(ONE_QUEUE, () => this.deleteNow());
  }

  private async deleteNow(): Promise<void> {
    for (const family of [4, 6] as const) {
      // With IPv6 off, ip6tables may not work here at all; leftovers from when it was on still go if it does.
      const removed = replaceChains('AGENT_ERR_HOST_RULES', this.netns, family, isHostChain);
      await (this.families.includes(family) ? removed : removed.catch(() => undefined));
      await mustRunInNetns(
        'AGENT_ERR_HOST_RULES',
        this.netns,
        'ipset',
        ['destroy', setName(family)],
        '',
        (r) => r.status === 0 || r.stderr.includes('does not exist'),
      );
    }
  }

  /** Every address in the sets, with its pod's UID. */
  entries(): Promise<ProbeIpEntry[]> {
    return this.queue.run(ONE_QUEUE, () => this.entriesNow());
  }

  private async entriesNow(): Promise<ProbeIpEntry[]> {
    const out: ProbeIpEntry[] = [];
    for (const family of this.families) {
      for (const line of (await this.ipset(['save', setName(family)])).split('\n')) {
        const m = /^add \S+ (\S+) comment "([^"]*)"/.exec(line);
        if (m !== null) out.push({ ip: m[1]!, uid: m[2]! });
      }
    }
    return out;
  }

  /**
   * Makes `ips` the pod's addresses in the sets: each is added with comment `uid` (taking it over from another
   * UID that held it, as Istio does), and the pod's entries not in `ips` go. IPv6 addresses are skipped when IPv6
   * is off: no rule would match them.
   */
  async addPod(uid: string, ips: readonly string[]): Promise<void> {
    checkUid(uid);
    const wanted = new Map<string, IpFamily>();
    for (const ip of ips) {
      const c = canonicalProbeIp(ip);
      if (this.families.includes(c.family)) wanted.set(c.ip, c.family);
    }
    await this.queue.run(ONE_QUEUE, async () => {
      const stale = (await this.entriesNow()).filter((e) => e.uid === uid && !wanted.has(e.ip));
      await this.restore([
        ...stale.map((e) => delLine(e)),
        ...[...wanted].map(([ip, family]) => `add ${setName(family)} ${ip} comment "${uid}"`),
      ]);
    });
  }

  /** Removes the entries of pod `uid` (un-enroll, pod deleted); an address another pod has since taken stays. */
  async removePod(uid: string): Promise<ProbeIpEntry[]> {
    checkUid(uid);
    return this.removeWhere((e) => e.uid === uid);
  }

  /** Removes the entries of every pod not in `enrolledUids` (startup, after the enrolled pods were added). */
  prune(enrolledUids: ReadonlySet<string>): Promise<ProbeIpEntry[]> {
    return this.removeWhere((e) => !enrolledUids.has(e.uid));
  }

  private removeWhere(match: (e: ProbeIpEntry) => boolean): Promise<ProbeIpEntry[]> {
    return this.queue.run(ONE_QUEUE, async () => {
      const gone = (await this.entriesNow()).filter(match);
      await this.restore(gone.map((e) => delLine(e)));
      return gone;
    });
  }

  private ipset(args: readonly string[]): Promise<string> {
    return mustRunInNetns('AGENT_ERR_HOST_RULES', this.netns, 'ipset', args);
  }

  private async restore(lines: readonly string[]): Promise<void> {
    if (lines.length > 0)
      await mustRunInNetns('AGENT_ERR_HOST_RULES', this.netns, 'ipset', ['-exist', 'restore'], lines.join('\n') + '\n');
  }
}

function setName(family: IpFamily): string {
  return family === 4 ? PROBE_IPSET_V4 : PROBE_IPSET_V6;
}

function delLine(e: ProbeIpEntry): string {
  return `del ${setName(net.isIPv4(e.ip) ? 4 : 6)} ${e.ip}`;
}

function checkUid(uid: string): void {
  if (!POD_UID.test(uid))
    throw new MeshError(
      'AGENT_ERR_HOST_RULES',
      `pod UID ${JSON.stringify(uid)} cannot be an ipset comment (1 to 255 of A-Z a-z 0-9 . _ : -)`,
    );
}

/** An address as ipset prints it; an IPv4-mapped IPv6 address is its IPv4 one (as Istio's `Unmap`). */
function canonicalProbeIp(ip: string): { ip: string; family: IpFamily } {
  const c = canonicalUnmappedIp(ip);
  if (c === undefined) throw new MeshError('AGENT_ERR_HOST_RULES', `pod IP ${JSON.stringify(ip)} is not an IP address`);
  return { ip: c, family: net.isIPv4(c) ? 4 : 6 };
}
