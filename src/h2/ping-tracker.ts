import { pingFrame } from './frame-writer.js';
import type { SendScheduler } from './send-scheduler.js';

/** PING's payload is always 8 bytes (RFC 9113 §6.7). */
const PING_LENGTH = 8;

interface PendingPing {
  readonly opaque: Buffer;
  readonly resolve: () => void;
  readonly reject: (e: Error) => void;
}

/**
 * PING both ways (RFC 9113 §6.7): the peer's are answered with an ACK carrying the same payload; ours carry a
 * counter and settle when the ACK with that payload comes, or fail with the connection. A keepalive is built on
 * `ping()` by the session's owner, as ztunnel builds its own on h2's PingPong.
 */
export class PingTracker {
  private pending: PendingPing[] = [];
  private count = 0;

  constructor(private readonly send: SendScheduler) {}

  /** Sends a PING; resolves on its ACK. */
  ping(): Promise<void> {
    const opaque = Buffer.alloc(PING_LENGTH);
    opaque.writeUInt32BE(++this.count, 4);
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ opaque, resolve, reject });
      this.send.write(pingFrame(opaque, false));
    });
  }

  /** A PING from the peer: answered at once; or the ACK of one of ours. */
  onPing(opaque: Buffer, ack: boolean): void {
    if (!ack) {
      this.send.write(pingFrame(opaque, true));
      return;
    }
    const i = this.pending.findIndex((p) => p.opaque.equals(opaque));
    if (i >= 0) this.pending.splice(i, 1)[0]!.resolve();
  }

  /** The connection is gone: every PING still waiting fails with `error`. */
  failAll(error: Error): void {
    for (const p of this.pending.splice(0)) p.reject(error);
  }
}
