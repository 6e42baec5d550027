import { MAX_WINDOW_SIZE } from './frame.js';
import type { H2Stream } from './h2-stream.js';

/**
 * How many streams we reset are remembered, so the frames the peer sent before it saw our RST_STREAM are ignored
 * (RFC 9113 §5.1, closed) rather than answered; a peer has at most SETTINGS_MAX_CONCURRENT_STREAMS in flight, and
 * a bound keeps a long-lived connection's memory flat.
 */
const RECENTLY_RESET_LIMIT = 1024;

/**
 * The streams of one connection that are not closed, by id, and the ids each side has used (RFC 9113 §5.1.1):
 * which ids are still idle, how many streams each side has open against SETTINGS_MAX_CONCURRENT_STREAMS, and which
 * closed streams this end reset recently. Closed streams leave it; their state lives on in their `H2Stream`.
 */
export class StreamRegistry {
  private readonly streams = new Map<number, H2Stream>();
  private nextLocalId: number;
  private lastPeerId = 0;
  private peerCount = 0;
  private localCount = 0;
  private readonly recentlyReset = new Set<number>();

  constructor(private readonly server: boolean) {
    this.nextLocalId = server ? 2 : 1;
  }

  /** Streams open now. */
  get size(): number {
    return this.streams.size;
  }

  /** Streams this end opened that are open now. */
  get localOpen(): number {
    return this.localCount;
  }

  /** Streams the peer opened that are open now. */
  get peerOpen(): number {
    return this.peerCount;
  }

  /** The highest stream id the peer has used (for GOAWAY's last-stream-id). */
  get lastPeerStreamId(): number {
    return this.lastPeerId;
  }

  /** Whether this end has stream ids left (ids are 31 bits). */
  get localIdsLeft(): boolean {
    return this.nextLocalId <= MAX_WINDOW_SIZE;
  }

  get(id: number): H2Stream | undefined {
    return this.streams.get(id);
  }

  /** A copy of the open streams, for loops that close some of them. */
  snapshot(): H2Stream[] {
    return [...this.streams.values()];
  }

  values(): IterableIterator<H2Stream> {
    return this.streams.values();
  }

  /** The id the next stream this end opens takes. */
  takeLocalId(): number {
    const id = this.nextLocalId;
    this.nextLocalId += 2;
    return id;
  }

  /** The peer used `id` (a new stream, refused or not): ids must increase (§5.1.1). */
  notePeerId(id: number): void {
    this.lastPeerId = id;
  }

  add(s: H2Stream): void {
    this.streams.set(s.id, s);
    if (this.isPeerId(s.id)) this.peerCount++;
    else this.localCount++;
  }

  /** Takes a closed stream out; false if it was out already. */
  remove(s: H2Stream): boolean {
    if (!this.streams.delete(s.id)) return false;
    if (this.isPeerId(s.id)) this.peerCount--;
    else this.localCount--;
    return true;
  }

  /** This end sent RST_STREAM on `id`. */
  noteReset(id: number): void {
    this.recentlyReset.add(id);
    if (this.recentlyReset.size > RECENTLY_RESET_LIMIT)
      this.recentlyReset.delete(this.recentlyReset.values().next().value!);
  }

  wasReset(id: number): boolean {
    return this.recentlyReset.has(id);
  }

  /** Whether the peer opens stream `id` (odd ids are a client's, §5.1.1). */
  isPeerId(id: number): boolean {
    return (id % 2 === 1) === this.server;
  }

  /** §5.1: a stream is idle until its initiator opens it, i.e. above the highest id that side has used. */
  isIdle(id: number): boolean {
    return this.isPeerId(id) ? id > this.lastPeerId : id >= this.nextLocalId;
  }
}
