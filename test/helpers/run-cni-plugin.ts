import { spawn } from 'node:child_process';
import { once } from 'node:events';

/** What a container runtime gets back from one plugin run. */
export interface PluginRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a CNI plugin executable as a runtime does (containernetworking/cni pkg/invoke/raw_exec.go): the CNI_*
 * variables in the environment, the network config on stdin, the result on stdout. `wrapper` runs it through another
 * command (`ip netns exec NODE`, to run it in a node's network namespace). Bounded by 20 s.
 */
export async function runCniPlugin(
  executable: string,
  env: Record<string, string>,
  stdin: string,
  wrapper: readonly string[] = [],
): Promise<PluginRun> {
  const argv = [...wrapper, executable];
  const p = spawn(argv[0]!, argv.slice(1), {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  p.stdin.end(stdin);
  const timer = setTimeout(() => p.kill(), 20_000);
  const [status] = (await once(p, 'close')) as [number | null];
  clearTimeout(timer);
  return { status, stdout, stderr };
}
