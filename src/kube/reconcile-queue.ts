/**
 * A controller's work queue, as Istio's (istio `pkg/kube/controllers/queue.go` over client-go's rate-limited
 * workqueue): a key waits at most once however often it is added, keys are reconciled one at a time, a key added
 * while it is being reconciled is reconciled again afterwards, and a failed key is retried after 5 ms, doubling
 * (client-go's DefaultTypedControllerRateLimiter; at most `maxRetryDelayMs`), until it has failed `maxAttempts` times;
 * then it is dropped with an error logged, until an event adds it again. Nothing is reconciled before `run()`, which a
 * controller calls once its informers have synced, as Istio's controllers wait for HasSynced.
 */
import { describeError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';

/** client-go's per-item exponential backoff base. */
const RETRY_BASE_MS = 5;

export class ReconcileQueue {
  private readonly waiting = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly retries = new Set<NodeJS.Timeout>();
  private running = false;
  private busy = false;
  private stopped = false;

  constructor(
    private readonly reconcile: (key: string) => Promise<void>,
    private readonly maxAttempts: number,
    private readonly log: Logger,
    private readonly maxRetryDelayMs = Infinity,
  ) {}

  add(key: string): void {
    if (this.stopped) return;
    this.waiting.add(key);
    void this.drain();
  }

  run(): void {
    this.running = true;
    void this.drain();
  }

  stop(): void {
    this.stopped = true;
    this.waiting.clear();
    for (const t of this.retries) clearTimeout(t);
    this.retries.clear();
  }

  private async drain(): Promise<void> {
    if (!this.running || this.busy) return;
    this.busy = true;
    for (let key = this.next(); key !== undefined; key = this.next()) {
      this.waiting.delete(key);
      try {
        await this.reconcile(key);
        this.failures.delete(key);
      } catch (e) {
        this.failed(key, e);
      }
    }
    this.busy = false;
  }

  private next(): string | undefined {
    if (this.stopped) return undefined;
    for (const k of this.waiting) return k;
    return undefined;
  }

  private failed(key: string, e: unknown): void {
    const attempts = (this.failures.get(key) ?? 0) + 1;
    if (attempts >= this.maxAttempts) {
      this.failures.delete(key);
      this.log.error(
        { key, attempts, error: describeError(e) },
        'reconcile failed; retry budget exceeded, waiting for the next event',
      );
      return;
    }
    this.failures.set(key, attempts);
    const delay = Math.min(RETRY_BASE_MS * 2 ** (attempts - 1), this.maxRetryDelayMs);
    this.log.warn({ key, attempts, retryMs: delay, error: describeError(e) }, 'reconcile failed; retrying');
    const t = setTimeout(() => {
      this.retries.delete(t);
      this.add(key);
    }, delay);
    this.retries.add(t);
  }
}
