/**
 * The install's progress, in istioctl's words (istio operator/pkg/util/progress/progress.go): while components are
 * applied and waited for, `Processing resources for Istio core, Istiod. Waiting for Deployment/istio-system/istiod`;
 * then `✔ Istiod installed 🧠` for each, `✘ Istiod encountered an error: ...` for one that fails,
 * `Pruning removed resources`, and `✔ Installation complete`. On a terminal the status is one line rewritten in
 * place with a blinking marker; otherwise each new status is a line of its own, printed once.
 */
import type { Component } from './components.js';

export interface ProgressOutput {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

const GREEN = (s: string): string => `\x1b[32m${s}\x1b[0m`;
const RED = (s: string): string => `\x1b[31m${s}\x1b[0m`;
const YELLOW = (s: string): string => `\x1b[33m${s}\x1b[0m`;
/** istioctl's marker cycle: mostly on, briefly off, so the line does not flicker. */
const SPINNER = ['-', '-', '-', ' '];
const SPIN_MS = 250;
const CLEAR_LINE = '\r\x1b[2K';

/** What one component reports. */
export interface ComponentProgress {
  waiting(ids: readonly string[]): void;
  finished(): void;
  failed(error: string): void;
}

export class ProgressLog {
  private readonly active = new Map<Component, readonly string[]>();
  private status: string | undefined;
  private lastPrinted: string | undefined;
  private frame = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly out: ProgressOutput) {}

  private get tty(): boolean {
    return this.out.isTTY === true;
  }

  /** A component starts being applied. */
  start(c: Component): ComponentProgress {
    this.active.set(c, []);
    this.update();
    return {
      waiting: (ids) => {
        this.active.set(c, ids);
        this.update();
      },
      finished: () => this.done(c, `${this.tty ? GREEN('✔') : '✔'} ${c.title} installed ${c.icon}`),
      failed: (error) => this.done(c, `${this.tty ? RED('✘') : '✘'} ${c.title} encountered an error: ${error}`),
    };
  }

  pruning(): void {
    this.setStatus('Pruning removed resources');
  }

  complete(): void {
    this.line(`${this.tty ? GREEN('✔') : '✔'} Installation complete`);
    this.stop();
  }

  uninstallComplete(): void {
    this.line(`${this.tty ? GREEN('✔') : '✔'} Uninstall complete`);
    this.stop();
  }

  /** Stops the terminal's marker; nothing more is drawn. */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    if (this.tty && this.status !== undefined) this.out.write(CLEAR_LINE);
    this.status = undefined;
  }

  private done(c: Component, message: string): void {
    this.active.delete(c);
    if (this.active.size === 0) this.status = undefined;
    this.line(message);
    this.update();
  }

  private update(): void {
    if (this.active.size === 0) return;
    const names = [...this.active.keys()].map((c) => c.title).sort();
    const waiting = [...this.active.values()].flat().sort();
    let msg = `Processing resources for ${names.join(', ')}.`;
    if (waiting.length > 0) msg += ` Waiting for ${waiting.join(', ')}`;
    this.setStatus(msg);
  }

  private setStatus(msg: string): void {
    this.status = msg;
    if (!this.tty) {
      if (msg !== this.lastPrinted) this.out.write(`- ${msg}\n`);
      this.lastPrinted = msg;
      return;
    }
    this.timer ??= setInterval(() => {
      this.frame++;
      this.draw();
    }, SPIN_MS).unref();
    this.draw();
  }

  private draw(): void {
    if (this.status === undefined) return;
    const width = (this.out.columns ?? 80) - 2;
    const msg = this.status.length > width ? `${this.status.slice(0, width - 3)}...` : this.status;
    this.out.write(`${CLEAR_LINE}${YELLOW(SPINNER[this.frame % SPINNER.length]!)} ${msg}`);
  }

  /** A line that stays, above the status. */
  line(text: string): void {
    this.out.write(this.tty ? `${CLEAR_LINE}${text}\n` : `${text}\n`);
    this.lastPrinted = undefined;
    if (this.tty) this.draw();
  }
}
