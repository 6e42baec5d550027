/**
 * A container as `amesh up`'s kubelet runs it: the process its launcher starts (the container runtime's shim,
 * runc-runtime.ts, which exits with the container's status and writes it to the exit file), in its own process
 * group and session, with stdout and stderr appended to the container's log file, and restarted by the pod's
 * restartPolicy with kubelet's CrashLoopBackOff (a first restart at once, then 10 s doubling to 5 min, forgotten
 * after 10 min of running). A state file names the shim, so a kubelet that restarts takes the container over
 * (`adopt`) instead of starting it again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { closeSync, openSync, readFileSync, watch, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Backoff } from '../lib/backoff.js';
import { describeError, MeshError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';
import { processStart } from './resource-journal.js';

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

/** How the container runtime starts and signals a container. */
export interface ContainerLauncher {
  /** The argv that runs the container, made afresh for every start; throws ContainerCreateError. */
  prepare(): { cmd: string; args: string[] };
  /** Signals the container's processes through the runtime; false when it has no such container (yet, or any more). */
  signal(signal: 'TERM' | 'KILL'): boolean;
}

export interface ContainerSpec {
  readonly name: string;
  readonly logFile: string;
  readonly restartPolicy: RestartPolicy;
  readonly launcher: ContainerLauncher;
  /** What a kubelet that restarts needs to take the running container over (RunRecord), kept across starts. */
  readonly stateFile: string;
  /** Where the runtime's shim writes the exit status when the container ends. */
  readonly exitFile: string;
}

/** The run of a container as the state file keeps it: its shim (the runtime's parent process) and its count. */
interface RunRecord {
  readonly pid: number;
  /** The shim's start time (/proc/PID/stat), so that a reused pid is not taken for it. */
  readonly start: string;
  readonly startedAt: number;
  readonly restartCount: number;
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

/** How often an adopted container's shim is checked for having died without writing the exit file (SIGKILL). */
const ADOPTED_CHECK_MS = 2_000;

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
  /** Ends the watch on an adopted container. */
  private unwatch: (() => void) | undefined;

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
      // The runtime gives the container its environment and working directory; runc itself needs neither. Its own
      // process group and session: the container outlives a kubelet that dies.
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
      child.once('exit', (code, signal) => {
        this.child = undefined;
        this.ended(code, signal, startedAt);
        resolve();
      });
    });
    child.once('error', (e) =>
      this.log.warn({ container: this.spec.name, error: e.message }, 'container process error'),
    );
    if (child.pid === undefined) return;
    const record: RunRecord = {
      pid: child.pid,
      start: processStart(child.pid) ?? '',
      startedAt,
      restartCount: this._restartCount,
    };
    writeFileSync(this.spec.stateFile, JSON.stringify(record), { mode: 0o600 });
    this.set({ t: 'running', pid: child.pid, startedAt });
  }

  /**
   * Takes over the container a kubelet before this one started (the state file names its shim), as kubelet finds
   * its containers through the runtime after a restart: still running, it is watched until its exit file appears
   * (or its shim is gone); ended meanwhile, its exit status counts as if seen. False when there is nothing to take
   * over, and the caller starts the container.
   */
  adopt(): boolean {
    let r: RunRecord;
    try {
      r = JSON.parse(readFileSync(this.spec.stateFile, 'utf8')) as RunRecord;
    } catch {
      return false;
    }
    this._restartCount = r.restartCount;
    const alive = processStart(r.pid) === r.start && r.start !== '';
    const code = this.exitStatus();
    if (code === undefined && !alive) return false;
    this.exited = new Promise((resolve) => {
      let done = false;
      const finish = (status: number | null): void => {
        if (done) return;
        done = true;
        this.unwatch?.();
        this.unwatch = undefined;
        this.ended(status, status === null ? 'SIGKILL' : null, r.startedAt);
        resolve();
      };
      if (code !== undefined) {
        this.set({ t: 'running', pid: r.pid, startedAt: r.startedAt });
        setImmediate(() => finish(code));
        return;
      }
      const check = (): void => {
        const status = this.exitStatus();
        if (status !== undefined) finish(status);
        else if (processStart(r.pid) !== r.start) finish(this.exitStatus() ?? null);
      };
      const watcher = watch(path.dirname(this.spec.exitFile), (_event, name) => {
        if (name === path.basename(this.spec.exitFile)) check();
      });
      const timer = setInterval(check, ADOPTED_CHECK_MS);
      this.unwatch = () => {
        watcher.close();
        clearInterval(timer);
      };
      this.set({ t: 'running', pid: r.pid, startedAt: r.startedAt });
      check();
    });
    this.log.info({ container: this.spec.name, pid: r.pid }, 'container taken over from an earlier kubelet');
    return true;
  }

  /** The status the shim wrote, if it has. */
  private exitStatus(): number | undefined {
    try {
      const n = Number(readFileSync(this.spec.exitFile, 'utf8').trim());
      return Number.isInteger(n) ? n : undefined;
    } catch {
      return undefined;
    }
  }

  /** The container's run that began at `startedAt` ended with the shim's `runtimeCode` (or its `runtimeSignal`). */
  private ended(runtimeCode: number | null, runtimeSignal: NodeJS.Signals | null, startedAt: number): void {
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
    if (!this.stopped && (this.spec.restartPolicy === 'Always' || (this.spec.restartPolicy === 'OnFailure' && failed)))
      this.scheduleRestart(false);
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
   * SIGTERM to the container, SIGKILL to all its processes after `graceMs`; resolves once it exited. The pod's
   * restartPolicy then applies as to any exit (a container killed for a failed liveness probe). A container runc
   * does not know yet (its shim just started) gets the signal through the shim's process group.
   */
  async kill(graceMs: number): Promise<void> {
    if (this._state.t !== 'running') return;
    const child = this.child;
    const signal = (sig: 'TERM' | 'KILL'): void => {
      if (this.spec.launcher.signal(sig) || child?.pid === undefined) return;
      try {
        process.kill(-child.pid, `SIG${sig}`);
      } catch {
        // the group is gone
      }
    };
    signal('TERM');
    const timer = setTimeout(() => signal('KILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** Kills the container as `kill` does, for good: it is not restarted. */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.kill(graceMs);
    this.unwatch?.();
  }
}
