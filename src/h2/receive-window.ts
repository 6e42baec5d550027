/**
 * One receive flow-control window (RFC 9113 §6.9): what the peer may still send, and the bytes the consumer
 * has taken but not yet given back. Credit returns in batches of at least half the window, so a stream moving
 * at full speed costs one WINDOW_UPDATE per half window rather than one per DATA frame, and the sender never
 * stalls while the consumer keeps up (ztunnel sizes these windows with HTTP2_STREAM_WINDOW_SIZE and
 * HTTP2_CONNECTION_WINDOW_SIZE).
 */
export class ReceiveWindow {
  private available: number;
  private unreturned = 0;
  private readonly threshold: number;

  constructor(readonly size: number) {
    this.available = size;
    this.threshold = Math.ceil(size / 2);
  }

  /** A flow-controlled frame of `n` bytes arrived; false when it exceeds what the peer was allowed to send. */
  receive(n: number): boolean {
    if (n > this.available) return false;
    this.available -= n;
    return true;
  }

  /** `n` received bytes left our hands; returns the WINDOW_UPDATE increment to send now, or 0 to wait for more. */
  release(n: number): number {
    this.unreturned += n;
    if (this.unreturned < this.threshold) return 0;
    const increment = this.unreturned;
    this.available += increment;
    this.unreturned = 0;
    return increment;
  }
}
