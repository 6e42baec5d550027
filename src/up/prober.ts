/**
 * One probe of one container, as kubelet's probe worker runs it (pkg/kubelet/prober/worker.go): after
 * `initialDelaySeconds` it runs every `periodSeconds`; the result changes only after `successThreshold` successes
 * or `failureThreshold` failures in a row. A readiness probe starts at failure, a liveness probe at success, a
 * startup probe unknown. A liveness or startup probe that reaches failure holds (probes no more): its container is
 * killed and restarted, and the restarted container gets new probers.
 */
import { EventEmitter } from 'node:events';
import type { V1Probe } from '@kubernetes/client-node';
import type { Clock } from '../controllers/clock.js';
import type { HandlerOutcome } from './container-handler.js';

/** Kubernetes' probe defaults (pkg/apis/core/v1/defaults.go SetDefaults_Probe). */
export const PROBE_DEFAULTS = {
  periodSeconds: 10,
  timeoutSeconds: 1,
  successThreshold: 1,
  failureThreshold: 3,
} as const;

export type ProbeKind = 'startup' | 'liveness' | 'readiness';
export type ProbeResult = 'unknown' | 'success' | 'failure';

/** How a probe kind is named in kubelet's events ("Liveness probe failed: ..."). */
export const PROBE_KIND_NAME: Readonly<Record<ProbeKind, string>> = {
  startup: 'Startup',
  liveness: 'Liveness',
  readiness: 'Readiness',
};

const INITIAL_RESULT: Readonly<Record<ProbeKind, ProbeResult>> = {
  startup: 'unknown',
  liveness: 'success',
  readiness: 'failure',
};

/** Emits 'result' when the result changes and 'failed' with the reason of every failed run. */
export class Prober extends EventEmitter<{ result: [ProbeResult]; failed: [string] }> {
  private _result: ProbeResult;
  private last: boolean | undefined;
  private run = 0;
  private cancel: (() => void) | undefined;
  private stopped = false;

  constructor(
    readonly kind: ProbeKind,
    private readonly probe: V1Probe,
    private readonly action: (timeoutMs: number) => Promise<HandlerOutcome>,
    private readonly clock: Clock,
  ) {
    super();
    this._result = INITIAL_RESULT[kind];
  }

  get result(): ProbeResult {
    return this._result;
  }

  start(): void {
    this.schedule((this.probe.initialDelaySeconds ?? 0) * 1000);
  }

  stop(): void {
    this.stopped = true;
    this.cancel?.();
  }

  private schedule(ms: number): void {
    if (!this.stopped) this.cancel = this.clock.setTimer(ms, () => void this.tick());
  }

  private async tick(): Promise<void> {
    const timeoutMs = (this.probe.timeoutSeconds ?? PROBE_DEFAULTS.timeoutSeconds) * 1000;
    const outcome = await this.action(timeoutMs).catch((e: unknown): HandlerOutcome => ({
      ok: false,
      why: (e as Error).message,
    }));
    if (this.stopped) return;
    if (!outcome.ok) this.emit('failed', outcome.why);
    this.run = this.last === outcome.ok ? this.run + 1 : 1;
    this.last = outcome.ok;
    const threshold = outcome.ok
      ? (this.probe.successThreshold ?? PROBE_DEFAULTS.successThreshold)
      : (this.probe.failureThreshold ?? PROBE_DEFAULTS.failureThreshold);
    if (this.run >= threshold) {
      const result = outcome.ok ? 'success' : 'failure';
      if (result !== this._result) {
        this._result = result;
        this.emit('result', result);
      }
      if (result === 'failure' && this.kind !== 'readiness') {
        this.stopped = true;
        return;
      }
    }
    this.schedule((this.probe.periodSeconds ?? PROBE_DEFAULTS.periodSeconds) * 1000);
  }
}
