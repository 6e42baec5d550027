/**
 * The OCI runtime spec (config.json, opencontainers/runtime-spec `config.md`) of one container as `amesh up`'s
 * kubelet asks runc to run it. There is no image: the container's root is a directory of its own in which every
 * top-level directory of the host is bind-mounted (recursively, so the host's own mounts under them show too) and
 * every top-level symlink is copied, so the container sees the host's filesystem. What differs, as it would in a
 * real container: its own `/proc`, `/sys` (of its network namespace) and an empty `/run`; its own `/etc/hosts`,
 * `/etc/resolv.conf` and `/etc/hostname`; the pod's volumes at their `mountPath`s; its own mount namespace and,
 * outside hostNetwork, its own UTS namespace with the pod's name as hostname. There is no PID namespace: a process
 * that is PID 1 would ignore SIGTERM unless it handles it, which no host program expects.
 *
 * A mount point that does not exist is made in the container's root directory or its `/run`, never on the host:
 * one whose nearest existing ancestor is a host directory gets an overlay of that directory, with the host's
 * files below and the container's own changes above (`overlays`).
 */
import path from 'node:path';

/** The process part of the spec. */
export interface OciProcess {
  readonly args: readonly string[];
  readonly env: readonly string[];
  readonly cwd: string;
  readonly user: { readonly uid: number; readonly gid: number; readonly additionalGids?: readonly number[] };
  readonly capabilities: readonly string[];
  readonly noNewPrivileges: boolean;
}

/** One mount of the pod's (a volume, or a file the kubelet manages such as /etc/hosts). */
export interface ContainerMount {
  readonly destination: string;
  readonly source: string;
  readonly readOnly: boolean;
  /** `mountPropagation`: HostToContainer (rslave) lets mounts the host makes below it appear; None (rprivate) by default. */
  readonly propagation?: 'None' | 'HostToContainer' | 'Bidirectional' | undefined;
}

const PROPAGATION = { None: 'rprivate', HostToContainer: 'rslave', Bidirectional: 'rshared' } as const;

/** An entry of the host's `/` as the root directory mirrors it. */
export type HostRootEntry =
  | { readonly name: string; readonly t: 'dir' }
  | { readonly name: string; readonly t: 'symlink'; readonly target: string };

/** Where a missing mount point's ancestor is overlaid: the host directory and the container's own layer. */
export interface Overlay {
  readonly dir: string;
  readonly upper: string;
  readonly work: string;
}

export interface OciSpecInput {
  readonly process: OciProcess;
  /** The pod's name, as the container's hostname; none for hostNetwork pods, which keep the node's. */
  readonly hostname: string | undefined;
  /** The network namespace to join (the pod's, or the node's for hostNetwork). */
  readonly netnsPath: string;
  readonly host: readonly HostRootEntry[];
  readonly mounts: readonly ContainerMount[];
  readonly overlays: readonly Overlay[];
  readonly readOnlyRootFilesystem: boolean;
  readonly cgroupsPath: string;
}

interface OciMountJson {
  destination: string;
  type: string;
  source: string;
  options: string[];
}

/** Top-level host entries the container gets its own of, or none at all. */
const NOT_MIRRORED = new Set(['proc', 'sys', 'run', 'lost+found']);

/** The spec, with `root.path` relative to the bundle (`rootfs`). */
export function ociSpec(s: OciSpecInput): Record<string, unknown> {
  const ro = s.readOnlyRootFilesystem ? ['ro'] : [];
  const mounts: OciMountJson[] = [];
  for (const e of s.host)
    if (e.t === 'dir' && !NOT_MIRRORED.has(e.name))
      mounts.push({ destination: `/${e.name}`, type: 'bind', source: `/${e.name}`, options: ['rbind', ...ro] });
  mounts.push(
    { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
    { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
    { destination: '/run', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'mode=755'] },
  );
  for (const o of s.overlays)
    mounts.push({
      destination: o.dir,
      type: 'overlay',
      source: 'overlay',
      options: [`lowerdir=${o.dir}`, `upperdir=${o.upper}`, `workdir=${o.work}`],
    });
  for (const m of s.mounts)
    mounts.push({
      destination: m.destination,
      type: 'bind',
      source: m.source,
      options: ['rbind', m.readOnly ? 'ro' : 'rw', PROPAGATION[m.propagation ?? 'None']],
    });
  // A mount that receives the host's later mounts needs the root's propagation to allow it, as containerd sets it.
  let rootfsPropagation: string | undefined;
  if (s.mounts.some((m) => m.propagation === 'HostToContainer')) rootfsPropagation = 'rslave';
  if (s.mounts.some((m) => m.propagation === 'Bidirectional')) rootfsPropagation = 'rshared';
  const caps = [...s.process.capabilities];
  const { uid, gid, additionalGids } = s.process.user;
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid, gid, ...(additionalGids === undefined ? {} : { additionalGids: [...additionalGids] }) },
      args: [...s.process.args],
      env: [...s.process.env],
      cwd: s.process.cwd,
      capabilities: { bounding: caps, effective: caps, permitted: caps },
      noNewPrivileges: s.process.noNewPrivileges,
    },
    root: { path: 'rootfs', readonly: false },
    ...(s.hostname === undefined ? {} : { hostname: s.hostname }),
    mounts,
    linux: {
      namespaces: [
        { type: 'network', path: s.netnsPath },
        { type: 'mount' },
        ...(s.hostname === undefined ? [] : [{ type: 'uts' }]),
      ],
      cgroupsPath: s.cgroupsPath,
      ...(rootfsPropagation === undefined ? {} : { rootfsPropagation }),
    },
  };
}

/**
 * Where the container's view of `destination` would be made if it does not exist: undefined when it exists, or
 * when its nearest existing ancestor is the root (made in the container's root directory) or is under `/run`
 * (the container's own tmpfs); otherwise that ancestor, a host directory to overlay. `exists` and `realpath` look
 * at the host.
 */
export function missingMountParent(
  destination: string,
  exists: (p: string) => boolean,
  realpath: (p: string) => string,
): string | undefined {
  let p = path.posix.normalize(destination);
  if (exists(p)) return undefined;
  while (p !== '/' && !exists(p)) p = path.posix.dirname(p);
  if (p === '/') return undefined;
  const real = realpath(p);
  if (real === '/' || real === '/run' || real.startsWith('/run/')) return undefined;
  return real;
}
