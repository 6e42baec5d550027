/**
 * The host's TCP settings that shape every path's figures: the congestion control new connections get (a pod's
 * network namespace inherits the host's) and the default queueing discipline. BBR without the `fq` qdisc paces
 * each socket with a kernel timer, which holds a loopback stream below what the cores could carry and raises the
 * proxies' CPU per GB, so it moves both the figures and the ratios against the direct paths (docs/performance.md,
 * "The host's congestion control").
 */
import { readFileSync } from 'node:fs';

export interface HostTcp {
  readonly congestionControl: string;
  readonly defaultQdisc: string;
}

function sysctl(name: string): string {
  try {
    return readFileSync(`/proc/sys/${name.replaceAll('.', '/')}`, 'utf8').trim();
  } catch {
    return 'unknown';
  }
}

/** Reads the settings from /proc/sys ('unknown' where it cannot). */
export function hostTcp(): HostTcp {
  return Object.freeze({
    congestionControl: sysctl('net.ipv4.tcp_congestion_control'),
    defaultQdisc: sysctl('net.core.default_qdisc'),
  });
}
