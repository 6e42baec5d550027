/**
 * Paces the installer's repairs as Istio's installationThrottle does (istio cni/pkg/install/install.go): one
 * repair every 5 s passes at once; one sooner waits for its turn, at most a second, and when more than five in a
 * row came too soon, something is undoing the installer's work (another CNI's agent rewriting the config list, such
 * as Cilium with `cni.exclusive`), which is logged.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../lib/log.js';

const INTERVAL_MS = 5_000;
const MAX_WAIT_MS = 1_000;
const HITS_BEFORE_WARNING = 5;

export class InstallThrottle {
  /** When the next repair's turn comes (a token bucket of one, refilled every INTERVAL_MS). */
  private nextTurn = 0;
  private hits = 0;

  constructor(
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  async wait(signal: AbortSignal, configFile: string | undefined): Promise<void> {
    const now = this.now();
    const delay = Math.max(0, this.nextTurn - now);
    this.nextTurn = Math.max(this.nextTurn, now) + INTERVAL_MS;
    if (delay === 0) {
      this.hits = 0;
      return;
    }
    await sleep(Math.min(delay, MAX_WAIT_MS), undefined, { signal });
    this.hits++;
    if (this.hits > HITS_BEFORE_WARNING)
      this.log.warn(
        {
          file: configFile,
          ...(configFile?.includes('cilium') === true
            ? { hint: "Cilium is in use: set 'cni.exclusive=false' in its configuration" }
            : {}),
        },
        'the CNI configuration was repaired many times in a short time: another component may be reverting it',
      );
  }
}
