/**
 * The container runtime of `amesh up`'s kubelet: runc (Debian's `runc`, the runtime kind's containerd uses), with
 * its state under the cluster's data directory and every container's cgroup under one cgroup of the cluster's
 * (`amesh-<cluster>`), so a crashed cluster's leftovers are found and removed by name. Each container is a
 * bundle directory (config.json from oci-spec.ts and a root directory that mirrors the host's `/`), run in the
 * foreground by `runc run` under a shell that writes runc's exit status to a file (SHIM): runc stays the
 * container's parent and exits with the container's status, which is what processes.ts waits on, as the shell's
 * child or, after a kubelet restart, through the file. Signals go through `runc kill`.
 */
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { readdir, readFile, rmdir } from 'node:fs/promises';
import path from 'node:path';
import {
  missingMountParent,
  ociSpec,
  type ContainerMount,
  type HostRootEntry,
  type OciProcess,
  type Overlay,
} from './oci-spec.js';

const CGROUP_ROOT = '/sys/fs/cgroup';
/**
 * The container's parent, as containerd's shim is: `runc run` in the foreground, then its exit status written to the
 * exit file (`$0`), so that a kubelet that started after the container, or restarted, still learns how it ended.
 */
const SHIM = 'runc "$@"; s=$?; echo $s > "$0.tmp" && mv "$0.tmp" "$0"; exit $s';

/** What one container run needs besides its process. */
export interface ContainerRun {
  /** Unique on the node while it runs: `<pod uid>-<container>`. */
  readonly id: string;
  /** Where the shim writes the container's exit status (runc's exit code) when it ends. */
  readonly exitFile: string;
  /** The container's directory: its bundle, root directory and overlay layers. */
  readonly dir: string;
  readonly process: OciProcess;
  readonly hostname: string | undefined;
  readonly netnsPath: string;
  readonly mounts: readonly ContainerMount[];
  readonly readOnlyRootFilesystem: boolean;
}

/** The host's top-level entries, read once: the host's `/` does not change under a running cluster. */
let hostRoot: readonly HostRootEntry[] | undefined;
function hostRootEntries(): readonly HostRootEntry[] {
  hostRoot ??= readdirSync('/', { withFileTypes: true }).flatMap((e): HostRootEntry[] => {
    if (e.isSymbolicLink()) return [{ name: e.name, t: 'symlink', target: readlinkSync(path.join('/', e.name)) }];
    return e.isDirectory() ? [{ name: e.name, t: 'dir' }] : [];
  });
  return hostRoot;
}

export class RuncRuntime {
  /** runc's state directory (`--root`). */
  readonly root: string;
  /** The cluster's cgroup, parent of every container's. */
  readonly cgroup: string;

  constructor(stateDir: string, cluster: string) {
    this.root = stateDir;
    this.cgroup = `amesh-${cluster}`;
  }

  /**
   * Writes the bundle of `r` (a fresh root directory and overlay layers: a restarted container starts from its
   * image again, here the host's files) and returns the argv that runs it.
   */
  prepare(r: ContainerRun): { cmd: string; args: string[] } {
    // A runc killed with its container leaves its state (and the container may still run on its layers): the id
    // is taken until that is deleted, which kills what is left.
    if (existsSync(path.join(this.root, r.id))) this.runc('delete', '--force', r.id);
    rmSync(r.dir, { recursive: true, force: true });
    const rootfs = path.join(r.dir, 'rootfs');
    mkdirSync(rootfs, { recursive: true, mode: 0o755 });
    const host = hostRootEntries();
    for (const e of host) if (e.t === 'symlink') symlinkSync(e.target, path.join(rootfs, e.name));
    const overlays: Overlay[] = [];
    for (const m of r.mounts) {
      const dir = missingMountParent(m.destination, existsSync, realpathSync);
      if (dir === undefined || overlays.some((o) => o.dir === dir)) continue;
      const layer = path.join(r.dir, 'layers', String(overlays.length));
      mkdirSync(path.join(layer, 'upper'), { recursive: true });
      mkdirSync(path.join(layer, 'work'), { recursive: true });
      overlays.push({ dir, upper: path.join(layer, 'upper'), work: path.join(layer, 'work') });
    }
    const spec = ociSpec({
      process: r.process,
      hostname: r.hostname,
      netnsPath: r.netnsPath,
      host,
      mounts: r.mounts,
      overlays,
      readOnlyRootFilesystem: r.readOnlyRootFilesystem,
      cgroupsPath: `/${this.cgroup}/${r.id}`,
    });
    writeFileSync(path.join(r.dir, 'config.json'), JSON.stringify(spec), { mode: 0o600 });
    rmSync(r.exitFile, { force: true });
    return { cmd: 'sh', args: ['-c', SHIM, r.exitFile, '--root', this.root, 'run', '--bundle', r.dir, r.id] };
  }

  /**
   * Sends `signal` to the container's processes (all of its cgroup for KILL); false when runc has no such container
   * (not created yet, or gone).
   */
  kill(id: string, signal: 'KILL' | 'TERM'): boolean {
    return this.runc('kill', ...(signal === 'KILL' ? ['--all'] : []), id, signal) === 0;
  }

  /** The argv that runs `cmd` inside a running container, as `kubectl exec` asks its runtime to. */
  execArgv(id: string, cmd: readonly string[]): string[] {
    return ['--root', this.root, 'exec', id, ...cmd];
  }

  private runc(...args: string[]): number | null {
    return spawnSync('runc', ['--root', this.root, ...args], { stdio: 'ignore' }).status;
  }
}

/** How long removal waits for the processes of a cgroup (containers killed a moment ago) to be gone. */
const CGROUP_EMPTY_WAIT_MS = 2_000;
const CGROUP_POLL_MS = 50;

/** rmdir of a cgroup, tried again while it still has processes that are exiting (EBUSY). */
async function rmdirCgroup(dir: string): Promise<boolean> {
  const deadline = Date.now() + CGROUP_EMPTY_WAIT_MS;
  for (;;) {
    try {
      await rmdir(dir);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EBUSY' || Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, CGROUP_POLL_MS));
    }
  }
}

/** SIGKILLs every process of cgroup `dir` (a container's that outlived its runc, or its kubelet). */
async function killCgroup(dir: string): Promise<void> {
  const procs = await readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
  for (const pid of procs.split('\n').filter((p) => p !== ''))
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // exited meanwhile
    }
}

/**
 * Removes cgroup `name` (a cluster's, `amesh-<cluster>`) from every hierarchy, with the containers' cgroups that a
 * runc killed before it cleaned up left in it, first killing what still runs in them (the containers of an `up`
 * that crashed). Returns the directories removed.
 */
export async function removeCgroup(name: string): Promise<string[]> {
  const removed: string[] = [];
  const hierarchies = [
    CGROUP_ROOT,
    ...(await readdir(CGROUP_ROOT).catch(() => [])).map((h) => path.join(CGROUP_ROOT, h)),
  ].filter((h) => isDir(path.join(h, name)));
  const containers = async (h: string): Promise<string[]> =>
    (await readdir(path.join(h, name), { withFileTypes: true }))
      .filter((c) => c.isDirectory())
      .map((c) => path.join(h, name, c.name));
  for (const h of hierarchies) for (const c of await containers(h)) await killCgroup(c);
  for (const h of hierarchies) {
    for (const c of await containers(h)) await rmdirCgroup(c);
    if (await rmdirCgroup(path.join(h, name))) removed.push(path.join(h, name));
  }
  return removed;
}

function isDir(p: string): boolean {
  try {
    return lstatSync(p).isDirectory();
  } catch {
    return false;
  }
}
