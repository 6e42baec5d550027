/**
 * A node's kubelet as a service of the node, as kind's nodes run kubelet under systemd (`Restart=always`,
 * `RestartSec=1s`): `amesh kubelet` started by `up` in its own process group (a Ctrl-C meant for `up` is not the
 * kubelet's), with stdin a pipe from `up` (closed by the kernel if `up` dies, which ends the kubelet and leaves its
 * pods), its JSON log lines written into `up`'s log under their own scope (so its errors reach the console as
 * `up`'s do), and restarted a second after it exits, unless it is being stopped. Stopping is SIGTERM (the node
 * shuts down: the kubelet stops its pods), then SIGKILL if it has not exited in time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { LogControl, Logger } from '../lib/log.js';
import { ameshCommand } from './amesh-command.js';

const RESTART_SEC_MS = 1_000;
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
type Level = (typeof LEVELS)[number];

export interface NodeServiceOptions {
  readonly node: string;
  /** `amesh kubelet`'s arguments. */
  readonly args: readonly string[];
  readonly logs: LogControl;
}

export class NodeService {
  private child: ChildProcess | undefined;
  private stopping = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly log: Logger;

  constructor(private readonly o: NodeServiceOptions) {
    this.log = o.logs.scope(`kubelet.${o.node}`);
  }

  start(): void {
    if (this.stopping) return;
    const { cmd, args } = ameshCommand();
    const child = spawn(cmd, [...args, 'kubelet', ...this.o.args], {
      env: { ...process.env, LOG_FORMAT: 'json' },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.child = child;
    createInterface({ input: child.stdout }).on('line', (l) => this.relay(l));
    createInterface({ input: child.stderr }).on('line', (l) => this.log.error({ node: this.o.node }, l));
    // Ended, or never started (an 'error' without a pid, which may come without an 'exit'): once, a restart.
    let ended = false;
    const restart = (why: string): void => {
      if (ended) return;
      ended = true;
      this.child = undefined;
      if (this.stopping) return;
      this.log.error({ node: this.o.node }, `the kubelet of ${this.o.node} ${why}; restarting it in 1 s`);
      this.timer = setTimeout(() => this.start(), RESTART_SEC_MS);
    };
    child.once('exit', (code, signal) => restart(`exited (${signal ?? `code ${String(code)}`})`));
    child.on('error', (e) => {
      if (child.pid === undefined) restart(`could not be started (${e.message})`);
      else this.log.warn({ node: this.o.node, error: e.message }, 'kubelet process error');
    });
  }

  /** One JSON log line of the kubelet, written into `up`'s log as the entry it is. */
  private relay(line: string): void {
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(line) as Record<string, unknown>;
    } catch {
      this.log.info({ node: this.o.node }, line);
      return;
    }
    const { level, message, scope } = e;
    const fields = Object.fromEntries(
      Object.entries(e).filter(([k]) => !['level', 'message', 'scope', 'time', 'component'].includes(k)),
    );
    const logger = typeof scope === 'string' ? this.o.logs.scope(scope) : this.log;
    const at: Level = LEVELS.includes(level as Level) ? (level as Level) : 'info';
    logger[at](fields, typeof message === 'string' ? message : '');
  }

  /** SIGTERM (the node shuts down, stopping its pods), SIGKILL after `timeoutMs`; resolves once it has exited. */
  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    const child = this.child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
  }
}
