import { spawn } from 'node:child_process';
import { once } from 'node:events';

/** Runs a peer process to completion without blocking this process's event loop (servers under test live here). */
export async function runToExit(
  cmd: string,
  args: string[],
  timeoutMs: number,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => p.kill(), timeoutMs);
  // 'close', not 'exit': a process may exit before its last output has been read from the pipes.
  const [status] = (await once(p, 'close')) as [number | null];
  clearTimeout(timer);
  return { status, stdout, stderr };
}
