import type { Clock } from '../../src/controllers/clock.js';

/** A clock that moves only when the test moves it; timers that come due fire in order as it does. */
export class ManualClock implements Clock {
  private timers: { at: number; fn: () => void }[] = [];

  constructor(private current: number) {}

  now(): number {
    return this.current;
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer = { at: this.current + ms, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Whether a timer is set to fire at `ms`. */
  hasTimerAt(ms: number): boolean {
    return this.timers.some((t) => t.at === ms);
  }

  /** Moves time on by `ms`, firing each timer that comes due. */
  advance(ms: number): void {
    this.set(this.current + ms);
  }

  set(ms: number): void {
    this.current = ms;
    const due = this.timers.filter((t) => t.at <= ms).sort((a, b) => a.at - b.at);
    this.timers = this.timers.filter((t) => t.at > ms);
    for (const t of due) t.fn();
  }
}
