/**
 * A container's preStop hook as kubelet runs it before stopping the container (kuberuntime_container.go
 * executePreStopHook, lifecycle/handlers.go): `exec` inside the container, `httpGet` to the pod from the node
 * (any answer is success), or `sleep` for its seconds, bounded by the grace period; a hook still running when the
 * grace period is over is left behind. A failed hook is reported and the container is stopped all the same.
 */
import type { V1LifecycleHandler } from '@kubernetes/client-node';
import type { Clock } from '../controllers/clock.js';
import { runHandler, type HandlerTarget } from './container-handler.js';

export interface PreStopResult {
  /** How much of the grace period the hook took. */
  readonly elapsedMs: number;
  /** The FailedPreStopHook event's message, if the hook failed. */
  readonly failure?: string;
}

export interface PreStopNames {
  readonly container: string;
  /** The pod as kubelet names it (`name_namespace(uid)`). */
  readonly pod: string;
}

export async function runPreStopHook(
  hook: V1LifecycleHandler,
  target: HandlerTarget,
  graceMs: number,
  clock: Clock,
  names: PreStopNames,
): Promise<PreStopResult> {
  const started = clock.now();
  let cancel: (() => void) | undefined;
  let cancelSleep: (() => void) | undefined;
  const graceOver = new Promise<undefined>((resolve) => (cancel = clock.setTimer(graceMs, () => resolve(undefined))));
  const run = async (): Promise<string | undefined> => {
    if (hook.sleep !== undefined) {
      await new Promise<void>((resolve) => {
        cancelSleep = clock.setTimer(Math.min(hook.sleep!.seconds * 1000, graceMs), resolve);
      });
      return undefined;
    }
    const outcome = await runHandler(hook, target, graceMs, false);
    if (outcome.ok) return undefined;
    const who = `for Container ${JSON.stringify(names.container)} in Pod ${JSON.stringify(names.pod)}`;
    if (hook.exec !== undefined)
      return `Exec lifecycle hook ([${(hook.exec.command ?? []).join(' ')}]) ${who} failed - error: ${outcome.why}`;
    if (hook.httpGet !== undefined)
      return `HTTP lifecycle hook (${hook.httpGet.path ?? '/'}) ${who} failed - error: ${outcome.why}`;
    return `Cannot run handler: ${outcome.why}`;
  };
  const failure = await Promise.race([run(), graceOver]);
  cancel?.();
  cancelSleep?.();
  const elapsedMs = Math.min(graceMs, clock.now() - started);
  return failure === undefined ? { elapsedMs } : { elapsedMs, failure };
}
