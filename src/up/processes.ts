/**
 * A container as `amesh up`'s kubelet runs it: the container's command and args as a process inside its pod's
 * network namespace (`ip netns exec` enters it and execs the command in place, so the pid is the container's),
 * in its own process group, with stdout and stderr appended to the container's log file, and restarted by the
 * pod's restartPolicy with kubelet's CrashLoopBackOff (a first restart at once, then 10 s doubling to 5 min,
 * forgotten after 10 min of running). The node's agent and ztunnel run the same way, as a DaemonSet's pods do.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import os from 'node:os';
import { Backoff } from '../lib/backoff.js';
import { describeError, MeshError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';
import { resolveCommand } from './host-tools.js';

/** kubelet's container restart back-off (pkg/kubelet/kubelet.go: backOffPeriod, MaxContainerBackOff). */
const RESTART_BACKOFF_INITIAL_MS = 10_000;
const RESTART_BACKOFF_MAX_MS = 300_000;
/** A container that ran this long without exiting starts its back-off afresh (kubelet's backOff GC period). */
const RESTART_BACKOFF_RESET_MS = 600_000;

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

export interface ContainerSpec {
  readonly name: string;
  /** command followed by args. */
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd?: string | undefined;
  /** The network namespace's name (under /run/netns). */
  readonly netns: string;
  readonly logFile: string;
  readonly restartPolicy: RestartPolicy;
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
    const { argv, env, netns, logFile, cwd } = this.spec;
    const cmd = argv[0] === undefined ? undefined : resolveCommand(argv[0], env['PATH'] ?? '');
    if (cmd === undefined) {
      const e = new MeshError(
        'UP_ERR_CONTAINER',
        argv[0] === undefined
          ? `container ${this.spec.name} has no command: amesh up runs a container's command and args, not its image`
          : `container ${this.spec.name}: "${argv[0]}" is not an executable on its PATH`,
      );
      this.log.warn({ container: this.spec.name, error: e.message, code: e.code }, 'cannot start container');
      this.set({ t: 'waiting', reason: 'CreateContainerError', message: describeError(e) });
      this.scheduleRestart(true);
      return;
    }
    const out = openSync(logFile, 'a', 0o600);
    let child: ChildProcess;
    try {
      child = spawn('ip', ['netns', 'exec', netns, cmd, ...argv.slice(1)], {
        env: { ...env },
        cwd: cwd ?? '/',
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
        const failed = code !== 0;
        const t = {
          t: 'terminated',
          exitCode: code ?? 128 + (signal === null ? 0 : os.constants.signals[signal]),
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

  /** SIGTERM to the container's process group, SIGKILL after `graceMs`; resolves once it exited. */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const child = this.child;
    if (child?.pid === undefined) return;
    const kill = (sig: NodeJS.Signals): void => {
      try {
        process.kill(-child.pid!, sig);
      } catch {
        // the group is gone
      }
    };
    kill('SIGTERM');
    const timer = setTimeout(() => kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
    // Anything the container left in its group goes with it.
    kill('SIGKILL');
  }
}
