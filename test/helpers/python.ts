import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Debian's interpreter: the python3-* packages the interop tests use install for it, not for other Pythons. */
export const PYTHON = '/usr/bin/python3';

/** `false` when `module` imports, else the reason to skip (named, with the package that brings it). */
export function pythonSkip(module: string, debianPackage: string): false | string {
  const probe = spawnSync(PYTHON, ['-c', `import ${module}`], { encoding: 'utf8' });
  return probe.status === 0 ? false : `Debian's ${debianPackage} is not installed (apt-get install ${debianPackage}; .ci/run does this): ${(probe.stderr || probe.error?.message || '').trim()}`;
}

/** Runs `test/interop/<script>` without blocking this process's event loop (servers under test may live here). */
export async function runPython(script: string, args: string[], timeoutMs = 15_000): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const file = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'interop', script);
  const p = spawn(PYTHON, [file, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => p.kill(), timeoutMs);
  const [status] = (await once(p, 'exit')) as [number | null];
  clearTimeout(timer);
  return { status, stdout, stderr };
}
