/**
 * Readiness probes as kubelet runs them (pkg/kubelet/prober): `exec` runs the command inside the container (the
 * runtime's exec), `tcpSocket` and `httpGet` connect from the node's network namespace to the pod IP
 * (a socket made in the node's namespace, as kubelet's own are, so the node agent's probe rules see them), each
 * with `timeoutSeconds`. After `initialDelaySeconds` a probe runs every `periodSeconds`; `successThreshold`
 * successes in a row make the container ready, `failureThreshold` failures in a row not ready.
 */
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { V1ContainerPort, V1Probe } from '@kubernetes/client-node';
import { tcpSocketInNetns } from '../native/native.js';
import type { Logger } from '../lib/log.js';
import { runCommand } from './run-command.js';

/** Kubernetes' probe defaults (pkg/apis/core/v1/defaults.go SetDefaults_Probe). */
const PROBE_DEFAULTS = { periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 } as const;

export interface ProbeTarget {
  readonly podIp: string;
  /** The argv that runs a command inside the container (the runtime's exec). */
  readonly execArgv: (command: readonly string[]) => string[];
  /** The node's network namespace path, where tcp and http probes start. */
  readonly nodeNetnsPath: string;
  readonly ports: readonly V1ContainerPort[];
}

type Outcome = { readonly ok: true } | { readonly ok: false; readonly why: string };

/** Emits 'change' when readiness flips. */
export class ReadinessProbe extends EventEmitter<{ change: [] }> {
  private _ready = false;
  private successes = 0;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private _lastFailure = '';

  constructor(
    private readonly probe: V1Probe,
    private readonly target: ProbeTarget,
    private readonly log: Logger,
  ) {
    super();
  }

  get ready(): boolean {
    return this._ready;
  }
  get lastFailure(): string {
    return this._lastFailure;
  }

  start(): void {
    this.timer = setTimeout(() => void this.tick(), (this.probe.initialDelaySeconds ?? 0) * 1000);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private async tick(): Promise<void> {
    const outcome = await this.runOnce().catch((e: unknown): Outcome => ({ ok: false, why: (e as Error).message }));
    if (this.stopped) return;
    if (outcome.ok) {
      this.failures = 0;
      this.successes++;
      if (!this._ready && this.successes >= (this.probe.successThreshold ?? PROBE_DEFAULTS.successThreshold))
        this.flip(true);
    } else {
      this.successes = 0;
      this.failures++;
      this._lastFailure = outcome.why;
      this.log.debug({ why: outcome.why }, 'readiness probe failed');
      if (this._ready && this.failures >= (this.probe.failureThreshold ?? PROBE_DEFAULTS.failureThreshold))
        this.flip(false);
    }
    this.timer = setTimeout(() => void this.tick(), (this.probe.periodSeconds ?? PROBE_DEFAULTS.periodSeconds) * 1000);
  }

  private flip(ready: boolean): void {
    this._ready = ready;
    this.log.info({ ready }, 'readiness changed');
    this.emit('change');
  }

  private port(p: number | string | undefined): number | undefined {
    if (typeof p === 'number') return p;
    if (p !== undefined && /^\d+$/.test(p)) return Number(p);
    return this.target.ports.find((x) => x.name === p)?.containerPort;
  }

  private runOnce(): Promise<Outcome> {
    const timeoutMs = (this.probe.timeoutSeconds ?? PROBE_DEFAULTS.timeoutSeconds) * 1000;
    const { exec, tcpSocket, httpGet } = this.probe;
    if (exec !== undefined) return this.exec(exec.command ?? [], timeoutMs);
    if (tcpSocket !== undefined)
      return this.connect(tcpSocket.host ?? this.target.podIp, this.port(tcpSocket.port), timeoutMs);
    if (httpGet !== undefined)
      return this.get(httpGet.host ?? this.target.podIp, this.port(httpGet.port), httpGet.path ?? '/', timeoutMs);
    return Promise.resolve({
      ok: false,
      why: 'the probe has no exec, tcpSocket or httpGet handler (amesh up runs these three)',
    });
  }

  private async exec(command: readonly string[], timeoutMs: number): Promise<Outcome> {
    if (command.length === 0) return { ok: false, why: 'exec probe without a command' };
    const [cmd, ...args] = this.target.execArgv(command);
    const r = await runCommand(cmd!, args, { timeoutMs });
    return r.code === 0
      ? { ok: true }
      : {
          ok: false,
          why:
            r.code === null
              ? `timed out after ${String(timeoutMs)} ms`
              : `exit status ${String(r.code)}: ${r.stderr.trim()}`,
        };
  }

  private connect(host: string, port: number | undefined, timeoutMs: number): Promise<Outcome> {
    if (port === undefined)
      return Promise.resolve({ ok: false, why: 'the probe names a port the container does not declare' });
    return new Promise((resolve) => {
      const s = tcpSocketInNetns(this.target.nodeNetnsPath, 4);
      const timer = setTimeout(() => s.destroy(new Error(`timed out after ${String(timeoutMs)} ms`)), timeoutMs);
      s.once('connect', () => {
        clearTimeout(timer);
        s.destroy();
        resolve({ ok: true });
      });
      s.once('error', (e) => {
        clearTimeout(timer);
        resolve({ ok: false, why: `dial tcp ${host}:${String(port)}: ${e.message}` });
      });
      s.connect(port, host);
    });
  }

  private get(host: string, port: number | undefined, urlPath: string, timeoutMs: number): Promise<Outcome> {
    if (port === undefined)
      return Promise.resolve({ ok: false, why: 'the probe names a port the container does not declare' });
    return new Promise((resolve) => {
      const req = http.get(
        {
          host,
          port,
          path: urlPath,
          timeout: timeoutMs,
          createConnection: () => tcpSocketInNetns(this.target.nodeNetnsPath, 4).connect(port, host),
          headers: { 'user-agent': 'kube-probe/1.32' },
        },
        (res) => {
          res.resume();
          const code = res.statusCode ?? 0;
          resolve(
            code >= 200 && code < 400
              ? { ok: true }
              : { ok: false, why: `HTTP probe failed with statuscode: ${String(code)}` },
          );
        },
      );
      req.once('timeout', () => req.destroy(new Error(`timed out after ${String(timeoutMs)} ms`)));
      req.once('error', (e) => resolve({ ok: false, why: e.message }));
    });
  }
}
