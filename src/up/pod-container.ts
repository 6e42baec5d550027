/**
 * One container of a pod as kubelet runs it: its process (processes.ts, restarted by the pod's restartPolicy), its
 * probes (prober.ts) and its preStop hook (pre-stop-hook.ts), and the containerStatus it reports. As kubelet's
 * prober manager (pkg/kubelet/prober/prober_manager.go) does, a startup probe gates the liveness and readiness
 * probes and `started`; a liveness or startup probe that fails `failureThreshold` times kills the container
 * (kuberuntime_manager.go computePodActions, kuberuntime_container.go killContainer: preStop, then SIGTERM and
 * SIGKILL after the probe's or the pod's grace period), which its restartPolicy then restarts.
 */
import { EventEmitter } from 'node:events';
import os from 'node:os';
import type { V1Container, V1ContainerStatus } from '@kubernetes/client-node';
import type { Clock } from '../controllers/clock.js';
import { kubeTime } from '../lib/kube-time.js';
import type { Logger } from '../lib/log.js';
import { runHandler, type HandlerTarget } from './container-handler.js';
import { runPreStopHook } from './pre-stop-hook.js';
import { PROBE_KIND_NAME, Prober, type ProbeKind } from './prober.js';
import { ContainerProcess, type ContainerLauncher, type ContainerState, type RestartPolicy } from './processes.js';

export interface PodContainerOptions {
  readonly logFile: string;
  /** The run's record and the shim's exit file (processes.ts), for a kubelet that restarts. */
  readonly stateFile: string;
  readonly exitFile: string;
  readonly restartPolicy: RestartPolicy;
  readonly launcher: ContainerLauncher;
  /** The id the runtime knows the container by (the status's `containerID` is `amesh://<id>`). */
  readonly containerId: string;
  readonly target: HandlerTarget;
  /** The pod's terminationGracePeriodSeconds, as it is now. */
  readonly graceSeconds: () => number;
  /** The pod as kubelet names it in messages (`name_namespace(uid)`). */
  readonly podName: string;
  readonly clock: Clock;
  readonly log: Logger;
  readonly event: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
}

/** kubelet's floor for what is left of the grace period after a preStop hook (minimumGracePeriodInSeconds). */
const MINIMUM_GRACE_MS = 2_000;

export function stateJson(s: ContainerState): V1ContainerStatus['state'] {
  if (s.t === 'waiting')
    return { waiting: { reason: s.reason, ...(s.message === undefined ? {} : { message: s.message }) } };
  if (s.t === 'running') return { running: { startedAt: kubeTime(s.startedAt) as unknown as Date } };
  return {
    terminated: {
      exitCode: s.exitCode,
      reason: s.reason,
      ...(s.signal === undefined ? {} : { signal: os.constants.signals[s.signal as NodeJS.Signals] }),
      startedAt: kubeTime(s.startedAt) as unknown as Date,
      finishedAt: kubeTime(s.finishedAt) as unknown as Date,
    },
  };
}

/** Emits 'change' whenever its state, restart count, `started` or readiness changes. */
export class PodContainer extends EventEmitter<{ change: [] }> {
  readonly process: ContainerProcess;
  private readonly probers = new Map<ProbeKind, Prober>();
  private _started = false;
  private stopping = false;

  constructor(
    readonly spec: V1Container,
    private readonly o: PodContainerOptions,
  ) {
    super();
    this.process = new ContainerProcess(
      {
        name: spec.name,
        logFile: o.logFile,
        restartPolicy: o.restartPolicy,
        launcher: o.launcher,
        stateFile: o.stateFile,
        exitFile: o.exitFile,
      },
      o.log,
    );
    let lastState = this.process.state.t;
    this.process.on('change', () => {
      if (this.process.state.t !== lastState) {
        lastState = this.process.state.t;
        this.stopProbers();
        this._started = false;
        if (lastState === 'running' && !this.stopping) this.startProbers();
      }
      this.emit('change');
    });
  }

  get name(): string {
    return this.spec.name;
  }
  get state(): ContainerState {
    return this.process.state;
  }
  /** Running, and its startup probe (if any) has succeeded. */
  get started(): boolean {
    return this.process.state.t === 'running' && this._started;
  }
  get ready(): boolean {
    return (
      this.started && (this.spec.readinessProbe === undefined || this.probers.get('readiness')?.result === 'success')
    );
  }

  /** Starts the container, or takes over the one an earlier kubelet started (its probes start afresh). */
  start(): void {
    if (!this.takeOver()) this.process.start();
  }

  /** Takes over the container an earlier kubelet started, if there is one; false when there is none. */
  takeOver(): boolean {
    return this.process.adopt();
  }

  private startProbers(): void {
    if (this.spec.startupProbe === undefined) this.afterStartup();
    else this.runProber('startup');
  }

  private afterStartup(): void {
    this._started = true;
    this.runProber('liveness');
    this.runProber('readiness');
  }

  private runProber(kind: ProbeKind): void {
    const probe = this.spec[`${kind}Probe`];
    if (probe === undefined) return;
    const p = new Prober(kind, probe, (timeoutMs) => runHandler(probe, this.o.target, timeoutMs), this.o.clock);
    // client-go's event correlator folds repeats into one Event; the recorder here does not, so a probe that keeps
    // failing the same way is one Unhealthy Event until it succeeds or fails otherwise.
    let reported: string | undefined;
    p.on('failed', (why) => {
      this.o.log.debug({ probe: kind, why }, 'probe failed');
      if (why !== reported) this.o.event('Warning', 'Unhealthy', `${PROBE_KIND_NAME[kind]} probe failed: ${why}`);
      reported = why;
    });
    p.on('result', (result) => {
      this.o.log.info({ probe: kind, result }, 'probe result changed');
      if (result === 'success') reported = undefined;
      if (kind === 'startup' && result === 'success') {
        p.stop();
        this.afterStartup();
      } else if (kind !== 'readiness' && result === 'failure') void this.restartUnhealthy(kind, probe);
      this.emit('change');
    });
    this.probers.set(kind, p);
    p.start();
  }

  private stopProbers(): void {
    for (const p of this.probers.values()) p.stop();
    this.probers.clear();
  }

  /** Kills a container whose liveness or startup probe failed; its restartPolicy decides whether it comes back. */
  private async restartUnhealthy(kind: ProbeKind, probe: { terminationGracePeriodSeconds?: number }): Promise<void> {
    if (this.stopping) return;
    const restart = this.o.restartPolicy !== 'Never';
    this.o.event(
      'Normal',
      'Killing',
      `Container ${this.name} failed ${kind} probe${restart ? ', will be restarted' : ''}`,
    );
    await this.kill((probe.terminationGracePeriodSeconds ?? this.o.graceSeconds()) * 1000);
  }

  /** Runs the preStop hook, if any, bounded by `graceMs`; returns what is left of the grace period. */
  private async preStop(graceMs: number): Promise<number> {
    const hook = this.spec.lifecycle?.preStop;
    if (hook === undefined || graceMs <= 0 || this.process.state.t !== 'running') return graceMs;
    const r = await runPreStopHook(hook, this.o.target, graceMs, this.o.clock, {
      container: this.name,
      pod: this.o.podName,
    });
    if (r.failure !== undefined) {
      this.o.log.warn({ error: r.failure }, 'FailedPreStopHook');
      this.o.event('Warning', 'FailedPreStopHook', r.failure);
    }
    return Math.max(MINIMUM_GRACE_MS, graceMs - r.elapsedMs);
  }

  /** preStop, SIGTERM and SIGKILL when the grace period is over; the restartPolicy then applies. */
  private async kill(graceMs: number): Promise<void> {
    await this.process.kill(await this.preStop(graceMs));
  }

  /** Stops the container for good: preStop, SIGTERM, SIGKILL after `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.stopProbers();
    await this.process.stop(await this.preStop(graceMs));
  }

  status(image: string, isInit: boolean): V1ContainerStatus {
    const p = this.process;
    const last = p.lastTerminated;
    const done = p.state.t === 'terminated' && p.state.exitCode === 0;
    return {
      name: this.name,
      image,
      imageID: '',
      ...(p.state.t === 'running' ? { containerID: `amesh://${this.o.containerId}` } : {}),
      ready: isInit ? done : this.ready,
      started: isInit ? p.state.t === 'running' : this.started,
      restartCount: p.restartCount,
      state: stateJson(p.state),
      ...(last !== undefined && p.state !== last ? { lastState: stateJson(last) } : {}),
    };
  }
}
