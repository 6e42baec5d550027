import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { runToExit } from './run-to-exit.js';
import { packageRoot } from '../../src/lib/package-root.js';

/** Debian's interpreter: the python3-* packages the interop tests use install for it, not for other Pythons. */
export const PYTHON = '/usr/bin/python3';

/** `false` when `module` imports, else the reason to skip (named, with the package that brings it). */
export function pythonSkip(module: string, debianPackage: string): false | string {
  const probe = spawnSync(PYTHON, ['-c', `import ${module}`], { encoding: 'utf8' });
  return probe.status === 0
    ? false
    : `Debian's ${debianPackage} is not installed (apt-get install ${debianPackage}; .ci/run does this): ${(probe.stderr || probe.error?.message || '').trim()}`;
}

/** Runs `test/interop/<script>` without blocking this process's event loop (servers under test may live here). */
export async function runPython(
  script: string,
  args: string[],
  timeoutMs = 15_000,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const file = path.join(packageRoot(), 'test', 'interop', script);
  return runToExit(PYTHON, [file, ...args], timeoutMs);
}
