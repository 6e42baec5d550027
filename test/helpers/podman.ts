/**
 * Containers from the amesh image (`npm run image`), run with podman as root: why a machine cannot, the resource
 * limits to give podman, and a container run as a process whose output a test reads.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { PrintingProcess } from './printed-line.js';

/** Why the image cannot be built and run here (root, podman and the build's tools), or undefined when it can. */
export function podmanSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root: podman runs the image with host networking (CI runs as root)';
  const missing = ['podman', 'buildah', 'mmdebstrap'].filter(
    (t) => spawnSync('sh', ['-c', `command -v ${t}`], { stdio: 'ignore' }).status !== 0,
  );
  return missing.length === 0 ? undefined : `needs ${missing.join(', ')} (Debian packages of the same names)`;
}

/** This process's hard limit of `resource`, as /proc/self/limits names it ("Max open files"). */
function hardLimit(resource: string): number {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(resource));
  const hard = line?.slice(resource.length).trim().split(/\s+/)[1];
  return hard === undefined || hard === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(hard);
}

/**
 * `--ulimit` flags podman can apply. Unless told, podman asks for its own defaults (over a million open files),
 * and runc may only lower a limit where root lacks CAP_SYS_RESOURCE (some sandboxes): the container fails to start
 * with "error setting rlimits". These are the limits podman itself runs with: this process's open files, and its
 * processes capped at kernel.pid_max, as podman caps its own.
 */
export function podmanUlimits(): string[] {
  const nofile = hardLimit('Max open files');
  const pidMax = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8'));
  const nproc = Math.min(hardLimit('Max processes'), pidMax);
  return ['--ulimit', `nofile=${nofile}:${nofile}`, '--ulimit', `nproc=${nproc}:${nproc}`];
}

export interface Container extends PrintingProcess {
  /** Stops the container with SIGTERM (podman passes it on) and resolves with its exit status. */
  stop(): Promise<number | null>;
}

/**
 * `podman run --rm` of `image` with `args` (podman's flags, the image, then the command) as a child process whose
 * output is read, named `name` so that `stop` and a failed test's cleanup can reach it.
 */
export function runContainer(name: string, args: readonly string[]): Container {
  const child = spawn('podman', ['run', '--rm', '--name', name, ...podmanUlimits(), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      const status = await exited;
      spawnSync('podman', ['rm', '--force', '--ignore', '--time', '0', name], { stdio: 'ignore' });
      return status;
    },
  };
}
