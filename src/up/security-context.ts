/**
 * A container's `securityContext` (over its pod's) as kubelet and containerd's CRI turn it into the process's
 * credentials: runAsUser and runAsGroup (the image's user otherwise, which here is root), supplementalGroups and
 * fsGroup as additional groups, runAsNonRoot checked before the container is made (kubernetes
 * pkg/kubelet/kuberuntime/security_context_others.go verifyRunAsNonRoot), the runtime's default capabilities with
 * `add` and `drop` applied in containerd's order (`ALL` in either), every capability when `privileged`, and no_new_privs when
 * `allowPrivilegeEscalation: false`. As on Linux for any non-root process, a container that runs as another user
 * than root loses its capabilities when it execs its command.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { MeshError } from '../lib/errors.js';

/** containerd's default capabilities for a container (pkg/oci/spec.go defaultUnixCaps). */
const DEFAULT_CAPS = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FSETID',
  'CAP_FOWNER',
  'CAP_MKNOD',
  'CAP_NET_RAW',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETFCAP',
  'CAP_SETPCAP',
  'CAP_NET_BIND_SERVICE',
  'CAP_SYS_CHROOT',
  'CAP_KILL',
  'CAP_AUDIT_WRITE',
] as const;

/** Every capability Linux has (include/uapi/linux/capability.h, 0 to 40). */
const ALL_CAPS = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_DAC_READ_SEARCH',
  'CAP_FOWNER',
  'CAP_FSETID',
  'CAP_KILL',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETPCAP',
  'CAP_LINUX_IMMUTABLE',
  'CAP_NET_BIND_SERVICE',
  'CAP_NET_BROADCAST',
  'CAP_NET_ADMIN',
  'CAP_NET_RAW',
  'CAP_IPC_LOCK',
  'CAP_IPC_OWNER',
  'CAP_SYS_MODULE',
  'CAP_SYS_RAWIO',
  'CAP_SYS_CHROOT',
  'CAP_SYS_PTRACE',
  'CAP_SYS_PACCT',
  'CAP_SYS_ADMIN',
  'CAP_SYS_BOOT',
  'CAP_SYS_NICE',
  'CAP_SYS_RESOURCE',
  'CAP_SYS_TIME',
  'CAP_SYS_TTY_CONFIG',
  'CAP_MKNOD',
  'CAP_LEASE',
  'CAP_AUDIT_WRITE',
  'CAP_AUDIT_CONTROL',
  'CAP_SETFCAP',
  'CAP_MAC_OVERRIDE',
  'CAP_MAC_ADMIN',
  'CAP_SYSLOG',
  'CAP_WAKE_ALARM',
  'CAP_BLOCK_SUSPEND',
  'CAP_AUDIT_READ',
  'CAP_PERFMON',
  'CAP_BPF',
  'CAP_CHECKPOINT_RESTORE',
] as const;

/** The process credentials of a container. */
export interface ContainerCredentials {
  readonly uid: number;
  readonly gid: number;
  readonly additionalGids: readonly number[];
  readonly capabilities: readonly string[];
  readonly noNewPrivileges: boolean;
  readonly readOnlyRootFilesystem: boolean;
}

const capName = (c: string): string => {
  const up = c.toUpperCase();
  return up.startsWith('CAP_') ? up : `CAP_${up}`;
};

/** The credentials container `c` of `pod` runs with; throws CreateContainerConfigError's message when it may not run. */
export function containerCredentials(pod: V1Pod, c: V1Container): ContainerCredentials {
  const podSc = pod.spec?.securityContext ?? {};
  const sc = c.securityContext ?? {};
  const uid = sc.runAsUser ?? podSc.runAsUser ?? 0;
  const gid = sc.runAsGroup ?? podSc.runAsGroup ?? 0;
  if ((sc.runAsNonRoot ?? podSc.runAsNonRoot) === true && uid === 0)
    throw new MeshError(
      'UP_ERR_CONTAINER',
      sc.runAsUser !== undefined || podSc.runAsUser !== undefined
        ? `container's runAsUser breaks non-root policy (pod: "${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})", container: ${c.name})`
        : 'container has runAsNonRoot and image will run as root',
    );
  const groups = [...(podSc.supplementalGroups ?? []), ...(podSc.fsGroup === undefined ? [] : [podSc.fsGroup])];
  const privileged = sc.privileged === true;
  let caps: Set<string>;
  if (privileged) caps = new Set(ALL_CAPS);
  else {
    // containerd's order (pkg/cri/opts/spec_linux.go): ALL added, ALL dropped, then each added, then each dropped.
    const drop = (sc.capabilities?.drop ?? []).map(capName);
    const add = (sc.capabilities?.add ?? []).map(capName);
    caps = new Set<string>(add.includes('CAP_ALL') ? ALL_CAPS : DEFAULT_CAPS);
    if (drop.includes('CAP_ALL')) caps.clear();
    for (const a of add) if ((ALL_CAPS as readonly string[]).includes(a)) caps.add(a);
    for (const d of drop) caps.delete(d);
  }
  return {
    uid,
    gid,
    additionalGids: [...new Set(groups)],
    capabilities: [...caps],
    noNewPrivileges: !privileged && sc.allowPrivilegeEscalation === false,
    readOnlyRootFilesystem: sc.readOnlyRootFilesystem === true,
  };
}
