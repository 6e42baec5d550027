/**
 * A request's body as the waypoint sends it on: read once from the client, written to the attempt in flight with
 * its back-pressure, kept (up to a limit) so that a retry can send it again, and copied to mirrors. A mirror never
 * slows the request: one that falls more than the limit behind, or starts after the kept bytes were let go, is
 * dropped. Written by hand because a stream that must be replayed to a later destination and fanned out without
 * back-pressure is not what `pipe` or `stream.PassThrough` offer.
 */
import type { Readable, Writable } from 'node:stream';

/** Envoy's default per-connection buffer limit, which also bounds what it keeps of a request for retries. */
export const RETRY_BUFFER_LIMIT = 1024 * 1024;

export class RequestBody {
  private kept: Buffer[] = [];
  private keptBytes = 0;
  private overflowed = false;
  private started = false;
  private ended = false;
  private target: Writable | undefined;
  /** The attempt whose back-pressure holds the client's body. */
  private waitingOn: Writable | undefined;
  private readonly mirrors = new Set<Writable>();
  /** Body bytes read from the client so far. */
  bytes = 0;

  constructor(
    private readonly req: Readable,
    private readonly limit: number = RETRY_BUFFER_LIMIT,
  ) {}

  /** Whether the client's body has been read to its end. */
  get complete(): boolean {
    return this.ended;
  }

  /** Whether all the body read so far is kept, so that it can be sent again. */
  get replayable(): boolean {
    return !this.overflowed;
  }

  /** Sends the body to `w` (what was read already, then the rest), in place of the previous attempt. */
  sendTo(w: Writable): void {
    this.resume();
    this.target = w;
    for (const c of this.kept) w.write(c);
    if (this.ended) w.end();
    this.start();
  }

  /** Copies the body to `w` as well; false when what was read already is no longer kept. */
  mirrorTo(w: Writable): boolean {
    if (this.overflowed) return false;
    for (const c of this.kept) w.write(c);
    if (this.ended) w.end();
    else this.mirrors.add(w);
    return true;
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    this.req.on('data', this.onData);
    this.req.once('end', this.onEnd);
  }

  private readonly onData = (c: Buffer): void => {
    this.bytes += c.length;
    if (!this.overflowed) {
      this.keptBytes += c.length;
      if (this.keptBytes <= this.limit) this.kept.push(c);
      else {
        this.overflowed = true;
        this.kept = [];
      }
    }
    for (const m of this.mirrors)
      if (m.destroyed || m.writableLength > this.limit) {
        this.mirrors.delete(m);
        m.destroy();
      } else m.write(c);
    const t = this.target;
    if (t !== undefined && !t.destroyed && !t.write(c) && this.waitingOn === undefined) {
      // Until the attempt takes more, or goes away (an upstream that answered and closed reads no more).
      this.req.pause();
      this.waitingOn = t;
      t.once('drain', this.resume);
      t.once('close', this.resume);
    }
  };

  private readonly resume = (): void => {
    const t = this.waitingOn;
    if (t === undefined) return;
    t.off('drain', this.resume);
    t.off('close', this.resume);
    this.waitingOn = undefined;
    this.req.resume();
  };

  private readonly onEnd = (): void => {
    this.ended = true;
    for (const m of this.mirrors) m.end();
    this.mirrors.clear();
    this.target?.end();
  };
}
