import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { runToExit } from './run-to-exit.js';

/** Why tests driving kubectl skip on this machine, or false when kubectl is installed. */
export const kubectlSkip = ((): false | string => {
  const probe = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
  return probe.status === 0
    ? false
    : `kubectl is not installed (apt-get install kubernetes-client; .ci/run does this): ${(probe.error?.message ?? probe.stderr).trim()}`;
})();

type KubectlRun = (...args: string[]) => Promise<{ status: number | null; stdout: string; stderr: string }>;

/** kubectl against one kubeconfig: `kubectl` returns the outcome, `ok` asserts success and returns stdout. */
export function kubectlWith(kubeconfigPath: () => string): {
  kubectl: KubectlRun;
  ok: (...args: string[]) => Promise<string>;
} {
  const kubectl: KubectlRun = async (...args) =>
    runToExit('kubectl', ['--kubeconfig', kubeconfigPath(), ...args], 30_000);
  const ok = async (...args: string[]): Promise<string> => {
    const r = await kubectl(...args);
    assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  return { kubectl, ok };
}
