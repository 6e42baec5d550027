/** Exponential backoff with full jitter in [d/2, d]; one class for every retry loop. */
export class Backoff {
  private current: number;
  constructor(
    private readonly initialMs: number,
    private readonly maxMs: number,
  ) {
    this.current = initialMs;
  }

  next(): number {
    const d = this.current;
    this.current = Math.min(this.current * 2, this.maxMs);
    return Math.round(d / 2 + Math.random() * (d / 2));
  }

  reset(): void {
    this.current = this.initialMs;
  }
}
