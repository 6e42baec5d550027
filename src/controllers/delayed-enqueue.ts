/**
 * A work queue's `AddAfter` (k8s.io/client-go `util/workqueue` delaying queue): a key is added once its delay has
 * passed on the controller's clock; asked again for the same key, the earlier time wins.
 */
import type { Clock } from './clock.js';

interface Pending {
  readonly at: number;
  readonly cancel: () => void;
}

export class DelayedEnqueue {
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly clock: Clock,
    private readonly enqueue: (key: string) => void,
  ) {}

  addAfter(key: string, ms: number): void {
    const delay = Math.max(0, ms);
    const at = this.clock.now() + delay;
    const current = this.pending.get(key);
    if (current !== undefined) {
      if (current.at <= at) return;
      current.cancel();
    }
    const cancel = this.clock.setTimer(delay, () => {
      this.pending.delete(key);
      this.enqueue(key);
    });
    this.pending.set(key, { at, cancel });
  }

  stop(): void {
    for (const p of this.pending.values()) p.cancel();
    this.pending.clear();
  }
}
