import { spawn } from 'node:child_process';
import { MeshError } from '../lib/errors.js';

export interface CommandResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command to its exit without blocking the event loop, `stdin` written and closed; after `timeoutMs` its
 * process group is killed (the result then has a null code).
 */
export function runCommand(
  cmd: string,
  args: readonly string[],
  o: { env?: NodeJS.ProcessEnv; stdin?: string; timeoutMs?: number } = {},
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, {
      env: o.env ?? process.env,
      stdio: [o.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: o.timeoutMs !== undefined,
    });
    const timer =
      o.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            try {
              process.kill(-p.pid!, 'SIGKILL');
            } catch {
              // exited meanwhile
            }
          }, o.timeoutMs);
    let stdout = '';
    let stderr = '';
    p.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    p.once('error', reject);
    p.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    if (o.stdin !== undefined) {
      // A plugin may exit without reading its stdin: its exit status tells what happened, not EPIPE.
      p.stdin?.on('error', () => undefined);
      p.stdin?.end(o.stdin);
    }
  });
}

/** Runs iproute2's `ip`; a failure is UP_ERR_NETWORK naming the command and what `ip` said. */
export async function ip(...args: string[]): Promise<string> {
  const r = await runCommand('ip', args).catch((e: unknown) => {
    throw new MeshError('UP_ERR_NETWORK', `cannot run ip: ${(e as Error).message} (install iproute2)`, { cause: e });
  });
  if (r.code !== 0)
    throw new MeshError(
      'UP_ERR_NETWORK',
      `ip ${args.join(' ')} failed: ${r.stderr.trim() || `exit status ${String(r.code)}`}`,
    );
  return r.stdout;
}
