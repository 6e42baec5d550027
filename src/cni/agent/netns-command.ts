/**
 * Runs a networking tool (iptables-restore, ip, ipset) inside a network namespace, as Istio's node agent does with
 * `setns` around its calls: here the child enters it (`nsenter --net=`, from util-linux), so the agent's own
 * threads never leave their namespace. A namespace given as an fd is passed to the child as its fd 3.
 */
import { spawn } from 'node:child_process';
import { MeshError, type ErrorCode } from '../../lib/errors.js';
import type { NetnsRef } from '../../native/native.js';

/** The fd number a namespace fd gets in the child (after stdin, stdout, stderr). */
const CHILD_NETNS_FD = 3;

export interface CommandResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** How a namespace is named in messages: its path, or `fd N`. */
function netnsName(netns: NetnsRef | undefined): string {
  if (netns === undefined) return 'the current network namespace';
  return typeof netns === 'number' ? `network namespace fd ${netns}` : `network namespace ${netns}`;
}

/**
 * Runs `cmd args` in `netns` (undefined: this process's own) with `input` on stdin, and resolves with its exit
 * status and output; rejects only when the program cannot be started (e.g. ENOENT: not installed).
 */
function runInNetns(
  netns: NetnsRef | undefined,
  cmd: string,
  args: readonly string[],
  input = '',
): Promise<CommandResult> {
  let argv: string[] = [cmd, ...args];
  const stdio: ('pipe' | number)[] = ['pipe', 'pipe', 'pipe'];
  if (typeof netns === 'number') {
    stdio.push(netns);
    argv = ['nsenter', `--net=/proc/self/fd/${CHILD_NETNS_FD}`, ...argv];
  } else if (netns !== undefined) {
    argv = ['nsenter', `--net=${netns}`, ...argv];
  }
  return new Promise((resolve, reject) => {
    const p = spawn(argv[0]!, argv.slice(1), { stdio });
    let stdout = '';
    let stderr = '';
    p.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    p.once('error', reject);
    p.once('close', (status) => resolve({ status, stdout, stderr }));
    // A tool that exits before reading its stdin (bad flags) makes the write fail with EPIPE; its status says why.
    p.stdin!.on('error', () => undefined);
    p.stdin!.end(input);
  });
}

/**
 * Runs a tool in `netns` and resolves with its stdout if it exits 0 (or `succeeded` says its result is fine);
 * otherwise fails with `code`, naming the namespace and quoting the tool's stderr.
 */
export async function mustRunInNetns(
  code: ErrorCode,
  netns: NetnsRef | undefined,
  cmd: string,
  args: readonly string[],
  input = '',
  succeeded: (r: CommandResult) => boolean = (r) => r.status === 0,
): Promise<string> {
  let r;
  try {
    r = await runInNetns(netns, cmd, args, input);
  } catch (e) {
    const missing = typeof netns === 'undefined' ? cmd : `nsenter (util-linux) or ${cmd}`;
    throw new MeshError(
      code,
      `cannot run ${cmd} in ${netnsName(netns)}: ${(e as Error).message} (is ${missing} installed?)`,
      { cause: e },
    );
  }
  if (!succeeded(r)) {
    const status = r.status === null ? 'was killed' : `exited ${r.status}`;
    throw new MeshError(
      code,
      `${cmd} ${args.join(' ')} in ${netnsName(netns)} ${status}: ${r.stderr.trim() || '(no stderr)'}`,
    );
  }
  return r.stdout;
}
