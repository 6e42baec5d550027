/**
 * A pod's `securityContext.sysctls`, as kubelet admits and sets them (kubernetes `pkg/kubelet/sysctl`): only the
 * safe set is allowed (`safe_sysctls.go`; kubelet's `--allowed-unsafe-sysctls` is not offered), a pod asking for
 * another is refused with SysctlForbidden, and the namespaced network ones are written in the pod's network
 * namespace before its containers start. A pod on the node's network may set none of them. The safe sysctls that
 * are not network ones (`kernel.shm_rmid_forced`) would need an IPC namespace per pod, which amesh's pods do not
 * have; they are refused the same way.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { MeshError } from '../lib/errors.js';
import { ip } from './run-command.js';

/** kubelet's safe network sysctls, which each pod's network namespace holds on its own. */
const SAFE_NET_SYSCTLS: ReadonlySet<string> = new Set([
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
  'net.ipv4.tcp_rmem',
  'net.ipv4.tcp_wmem',
]);

/** The pod's sysctls, or the SysctlForbidden reason it cannot run. */
export function podSysctls(pod: V1Pod): { name: string; value: string }[] {
  const wanted = pod.spec?.securityContext?.sysctls ?? [];
  for (const s of wanted) {
    // kubelet accepts both separators (`net/ipv4/...` as well as `net.ipv4...`).
    const name = s.name.replaceAll('/', '.');
    if (!SAFE_NET_SYSCTLS.has(name))
      throw new MeshError('UP_ERR_SYSCTL', `SysctlForbidden: forbidden sysctl: "${s.name}" not allowlisted`);
    if (pod.spec?.hostNetwork === true)
      throw new MeshError('UP_ERR_SYSCTL', `SysctlForbidden: sysctl "${s.name}" not allowed with host net enabled`);
  }
  return wanted.map((s) => ({ name: s.name.replaceAll('/', '.'), value: s.value }));
}

/** Writes the pod's network sysctls in its network namespace. */
export async function applyPodSysctls(
  netns: string,
  sysctls: readonly { name: string; value: string }[],
): Promise<void> {
  for (const s of sysctls) await ip('netns', 'exec', netns, 'sysctl', '-qw', `${s.name}=${s.value}`);
}
