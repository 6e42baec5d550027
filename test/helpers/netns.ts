import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { runToExit } from './run-to-exit.js';

/** `false` when this process may make network namespaces and iptables rules, else the reason to skip. */
export function netnsSkip(): false | string {
  if (process.getuid?.() !== 0) return 'needs root: network namespaces, setns, SO_MARK and iptables (CI runs as root)';
  for (const tool of ['ip', 'iptables', 'ip6tables', 'ss', 'ipset', 'nsenter']) {
    if (spawnSync(tool, ['-V'], { stdio: 'ignore' }).status !== 0)
      return `${tool} is not installed (iproute2, iptables, ipset, util-linux; .ci/run installs them)`;
  }
  return false;
}

/** Runs a command and returns its stdout; a non-zero exit fails with its stderr. */
export async function mustRun(cmd: string, args: string[]): Promise<string> {
  const r = await runToExit(cmd, args, 10_000);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

/**
 * A throwaway network namespace (`ip netns add amesh-t-<random>`) with loopback up, as a pod without its
 * interfaces. Its iptables rules go with it; `remove()` deletes it (its sockets must be closed first for the
 * kernel to free it).
 */
export class TestNetns {
  readonly name = `amesh-t-${randomBytes(4).toString('hex')}`;
  readonly path = `/var/run/netns/${this.name}`;

  static async create(): Promise<TestNetns> {
    const ns = new TestNetns();
    await mustRun('ip', ['netns', 'add', ns.name]);
    await mustRun('ip', ['-n', ns.name, 'link', 'set', 'lo', 'up']);
    return ns;
  }

  /** Runs `cmd` inside the namespace (`ip netns exec`) and returns its stdout. */
  exec(cmd: string, args: string[]): Promise<string> {
    return mustRun('ip', ['netns', 'exec', this.name, cmd, ...args]);
  }

  async remove(): Promise<void> {
    await mustRun('ip', ['netns', 'del', this.name]);
  }
}

/** Runs `body` with `count` fresh throwaway namespaces, removed afterwards. */
export async function withNetns(count: number, body: (...ns: TestNetns[]) => Promise<void>): Promise<void> {
  const all: TestNetns[] = [];
  try {
    for (let i = 0; i < count; i++) all.push(await TestNetns.create());
    await body(...all);
  } finally {
    for (const ns of all) await ns.remove();
  }
}
