/**
 * A container as `amesh up`'s kubelet runs it: the process its launcher starts (the container runtime,
 * runc-runtime.ts, which stays the container's parent and exits with its status), in its own process group, with
 * stdout and stderr appended to the container's log file, and restarted by the pod's restartPolicy with kubelet's
 * CrashLoopBackOff (a first restart at once, then 10 s doubling to 5 min, forgotten after 10 min of running).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import os from 'node:os';
import { Backoff } from '../lib/backoff.js';
import { describeError, MeshError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';

/** kubelet's container restart back-off (pkg/kubelet/kubelet.go: backOffPeriod, MaxContainerBackOff). */
const RESTART_BACKOFF_INITIAL_MS = 10_000;
const RESTART_BACKOFF_MAX_MS = 300_000;
/** A container that ran this long without exiting starts its back-off afresh (kubelet's backOff GC period). */
const RESTART_BACKOFF_RESET_MS = 600_000;

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

/**
 * Why a container could not be made, with kubelet's reason: `CreateContainerConfigError` for what its pod's
 * configuration gets wrong (a missing ConfigMap key, runAsNonRoot as root), `CreateContainerError` otherwise.
 */
export class ContainerCreateError extends MeshError {
  constructor(
    readonly reason: 'CreateContainerConfigError' | 'CreateContainerError',
    message: string,
  ) {
    super('UP_ERR_CONTAINER', message);
  }
}

/** How the container runtime starts and kills a container. */
export interface ContainerLauncher {
  /** The argv that runs the container, made afresh for every start; throws ContainerCreateError. */
  prepare(): { cmd: string; args: string[] };
  /** Kills the container's processes (after its grace period). */
  kill(): void;
}

export interface ContainerSpec {
  readonly name: string;
  readonly logFile: string;
  readonly restartPolicy: RestartPolicy;
  readonly launcher: ContainerLauncher;
}

export type ContainerState =
  | { readonly t: 'waiting'; readonly reason: string; readonly message?: string }
  | { readonly t: 'running'; readonly pid: number; readonly startedAt: number }
  | {
      readonly t: 'terminated';
      readonly exitCode: number;
      readonly signal?: string;
      readonly reason: string;
      readonly startedAt: number;
      readonly finishedAt: number;
    };

/** The name of signal `n`, if there is one. */
function signalName(n: number): NodeJS.Signals | undefined {
  return (Object.entries(os.constants.signals) as [NodeJS.Signals, number][]).find(([, v]) => v === n)?.[0];
}

/** Emits 'change' whenever its state or restart count changes. */
export class ContainerProcess extends EventEmitter<{ change: [] }> {
  private _state: ContainerState = { t: 'waiting', reason: 'ContainerCreating' };
  private _lastTerminated: Extract<ContainerState, { t: 'terminated' }> | undefined;
  private _restartCount = 0;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private readonly backoff = new Backoff(RESTART_BACKOFF_INITIAL_MS, RESTART_BACKOFF_MAX_MS);
  private failedBefore = false;
  private stopped = false;

  constructor(
    readonly spec: ContainerSpec,
    private readonly log: Logger,
  ) {
    super();
  }

  get state(): ContainerState {
    return this._state;
  }
  get lastTerminated(): Extract<ContainerState, { t: 'terminated' }> | undefined {
    return this._lastTerminated;
  }
  get restartCount(): number {
    return this._restartCount;
  }

  start(): void {
    if (this.stopped) return;
    let launch: { cmd: string; args: string[] };
    try {
      launch = this.spec.launcher.prepare();
    } catch (e) {
      const reason = e instanceof ContainerCreateError ? e.reason : 'CreateContainerError';
      this.log.warn({ container: this.spec.name, error: describeError(e), reason }, 'cannot create container');
      this.set({ t: 'waiting', reason, message: describeError(e) });
      this.scheduleRestart(true);
      return;
    }
    const out = openSync(this.spec.logFile, 'a', 0o600);
    let child: ChildProcess;
    try {
      // The runtime gives the container its environment and working directory; runc itself needs neither.
      child = spawn(launch.cmd, launch.args, {
        env: { PATH: process.env['PATH'] ?? '' },
        cwd: '/',
        detached: true,
        stdio: ['ignore', out, out],
      });
    } finally {
      closeSync(out);
    }
    this.child = child;
    const startedAt = Date.now();
    this.exited = new Promise((resolve) => {
      child.once('exit', (runtimeCode, runtimeSignal) => {
        this.child = undefined;
        // runc exits with 128+N for a container killed by signal N (as a shell reports it).
        const bySignal = runtimeCode !== null && runtimeCode > 128 ? signalName(runtimeCode - 128) : undefined;
        const code = bySignal === undefined ? runtimeCode : null;
        const signal = bySignal ?? runtimeSignal;
        const failed = code !== 0;
        const t = {
          t: 'terminated',
          exitCode: runtimeCode ?? 128 + (signal === null ? 0 : os.constants.signals[signal]),
          ...(signal === null ? {} : { signal }),
          reason: failed ? 'Error' : 'Completed',
          startedAt,
          finishedAt: Date.now(),
        } as const;
        this._lastTerminated = t;
        if (failed && !this.stopped)
          this.log.error(
            { container: this.spec.name, exitCode: code, signal },
            `container ${this.spec.name} failed: ${signal === null ? `exit code ${String(code)}` : `killed by ${signal}`}`,
          );
        else this.log.info({ container: this.spec.name, exitCode: code, signal }, 'container exited');
        if (Date.now() - startedAt >= RESTART_BACKOFF_RESET_MS) {
          this.backoff.reset();
          this.failedBefore = false;
        }
        this.set(t);
        resolve();
        if (
          !this.stopped &&
          (this.spec.restartPolicy === 'Always' || (this.spec.restartPolicy === 'OnFailure' && failed))
        )
          this.scheduleRestart(false);
      });
    });
    child.once('error', (e) =>
      this.log.warn({ container: this.spec.name, error: e.message }, 'container process error'),
    );
    if (child.pid !== undefined) this.set({ t: 'running', pid: child.pid, startedAt });
  }

  /** Starts the container again after the back-off; `createFailed`: it never ran, so it is retried, not restarted. */
  private scheduleRestart(createFailed: boolean): void {
    const delay = this.failedBefore ? this.backoff.next() : 0;
    this.failedBefore = true;
    if (delay > 0 && !createFailed)
      this.set({
        t: 'waiting',
        reason: 'CrashLoopBackOff',
        message: `back-off ${String(Math.round(delay / 1000))}s restarting failed container=${this.spec.name}`,
      });
    this.timer = setTimeout(() => {
      if (!createFailed) this._restartCount++;
      this.start();
    }, delay);
  }

  private set(s: ContainerState): void {
    this._state = s;
    this.emit('change');
  }

  /**
   * SIGTERM to the container's process group, SIGKILL after `graceMs`; resolves once it exited. The pod's
   * restartPolicy then applies as to any exit (a container killed for a failed liveness probe).
   */
  async kill(graceMs: number): Promise<void> {
    const child = this.child;
    if (child?.pid === undefined) return;
    const signal = (sig: NodeJS.Signals): void => {
      try {
        process.kill(-child.pid!, sig);
      } catch {
        // the group is gone
      }
    };
    signal('SIGTERM');
    const timer = setTimeout(() => {
      this.spec.launcher.kill();
      signal('SIGKILL');
    }, graceMs);
    await this.exited;
    clearTimeout(timer);
    // Anything the container left in its group goes with it.
    signal('SIGKILL');
  }

  /** Kills the container as `kill` does, for good: it is not restarted. */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.kill(graceMs);
  }
}
