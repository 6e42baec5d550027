import type net from 'node:net';
import { DEFAULT_WINDOW_SIZE, MIN_MAX_FRAME_SIZE } from './frame.js';
import { FrameWriter, headersFrames, rstStreamFrame } from './frame-writer.js';
import type { H2Stream } from './h2-stream.js';
import { isClosed } from './stream-state.js';

/** A write's completion callback, as a Writable's `_write` gets it. */
export type WriteDone = (error?: Error | null) => void;

/**
 * What goes out on a connection's socket, in order: control frames as they are made, HEADERS with their
 * CONTINUATIONs, and DATA as far as the stream's and the connection's send windows (RFC 9113 §6.9) allow. A
 * stream's queued writes are framed in DATA of at most the peer's frame size, all under one cork: whatever a loop
 * turn queued leaves in one TLS write. Frame headers come from the FrameWriter's slab and payloads are sent as
 * they are, so a chunk costs no copy, promise or closure. Once stopped (the connection failed, drained to its end,
 * or its socket closed), nothing more is written.
 */
export class SendScheduler {
  /** What we may still send on the connection; the peer's WINDOW_UPDATEs on stream 0 grow it (FlowControl). */
  connectionWindow = DEFAULT_WINDOW_SIZE;
  /** The peer's SETTINGS_MAX_FRAME_SIZE: no DATA frame is longer. */
  maxFrameSize = MIN_MAX_FRAME_SIZE;
  private readonly writer = new FrameWriter();
  /** Streams with data waiting for connection-level window, in the order they ran out. */
  private connectionBlocked: H2Stream[] = [];
  /** Write callbacks held until the socket drains, so a stream's writer feels the socket's backpressure. */
  private drainWaiters: WriteDone[] = [];
  private done = false;

  constructor(private readonly socket: net.Socket) {
    socket.on('drain', () => this.releaseDrainWaiters());
  }

  /** No more frames are written: the connection failed, drains to its end, or its socket closed. */
  get stopped(): boolean {
    return this.done;
  }

  stop(): void {
    this.done = true;
  }

  /** A frame made whole by its caller (SETTINGS, PING, GOAWAY...). */
  write(frame: Buffer): void {
    this.socket.write(frame);
  }

  /** Several frames in one socket write. */
  writeCorked(frames: readonly Buffer[]): void {
    this.socket.cork();
    for (const f of frames) this.socket.write(f);
    this.socket.uncork();
  }

  /** An encoded header block as HEADERS and the CONTINUATIONs the peer's frame size requires, in one write. */
  writeHeaders(streamId: number, block: Uint8Array, endStream: boolean): void {
    this.writeCorked(headersFrames(streamId, block, endStream, this.maxFrameSize));
  }

  writeRstStream(streamId: number, code: number): void {
    if (!this.done) this.socket.write(rstStreamFrame(streamId, code));
  }

  /** WINDOW_UPDATEs returning receive credit: on the stream and on the connection (an increment of 0 is left out). */
  writeWindowUpdates(streamId: number, streamIncrement: number, connectionIncrement: number): void {
    if (this.done || (streamIncrement === 0 && connectionIncrement === 0)) return;
    this.socket.cork();
    if (streamIncrement > 0) this.socket.write(this.writer.windowUpdate(streamId, streamIncrement));
    if (connectionIncrement > 0) this.socket.write(this.writer.windowUpdate(0, connectionIncrement));
    this.socket.uncork();
  }

  /** The connection's first WINDOW_UPDATE, written before the connection is up (so never stopped yet). */
  windowUpdateFrame(increment: number): Buffer {
    return this.writer.windowUpdate(0, increment);
  }

  /** Queues one write of stream `s`; `done` runs once every byte of it is framed and the socket takes more. */
  enqueue(s: H2Stream, chunk: Buffer, done: WriteDone): void {
    s.sendQueue.push(chunk);
    s.pendingDone = done;
    this.flush(s);
  }

  /** Queues writes the stream buffered while one was in progress, to be sent together. */
  enqueueBatch(s: H2Stream, chunks: readonly { chunk: Buffer }[], done: WriteDone): void {
    for (const c of chunks) s.sendQueue.push(c.chunk);
    s.pendingDone = done;
    this.flush(s);
  }

  /** END_STREAM as an empty DATA frame, once every queued write of the stream has gone. */
  writeEndStream(s: H2Stream): void {
    this.socket.write(this.writer.dataHeader(s.id, 0, true));
  }

  /** Sends what `s` has queued, if it has a write waiting that is not held for connection window. */
  resume(s: H2Stream): void {
    if (s.pendingDone !== undefined && !s.queuedForConnectionWindow) this.flush(s);
  }

  /** The connection window grew: the streams that ran out of it send, in the order they ran out. */
  resumeBlocked(): void {
    const blocked = this.connectionBlocked;
    this.connectionBlocked = [];
    for (const s of blocked) {
      s.queuedForConnectionWindow = false;
      if (s.pendingDone !== undefined && !isClosed(s.state)) this.flush(s);
    }
  }

  /**
   * A write still waiting for window on a stream that is gone will never be sent: it completes now, as a destroyed
   * socket's pending write does (without an error: the stream's own destroy reports why), and its chunks are not
   * held until the window reopens.
   */
  cancel(s: H2Stream): void {
    const done = s.pendingDone;
    if (done === undefined) return;
    s.sendQueue.length = 0;
    s.pendingOffset = 0;
    s.pendingDone = undefined;
    const queued = this.connectionBlocked.indexOf(s);
    if (queued >= 0) this.connectionBlocked.splice(queued, 1);
    done();
  }

  /** Writes held until the socket drains complete: it drained, or it closed and nothing will drain it. */
  releaseDrainWaiters(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }

  /**
   * Sends as much of the stream's queued writes as both windows allow, as DATA frames of at most the peer's frame
   * size, all under one cork: whatever a loop turn queued leaves in one TLS write.
   */
  private flush(s: H2Stream): void {
    if (this.done) return;
    const queue = s.sendQueue;
    let corked = false;
    while (queue.length > 0) {
      const chunk = queue[0]!;
      const length = chunk.length;
      let off = s.pendingOffset;
      while (off < length) {
        const n = Math.min(length - off, s.sendWindow, this.connectionWindow, this.maxFrameSize);
        if (n <= 0) break;
        if (!corked) {
          this.socket.cork();
          corked = true;
        }
        this.socket.write(this.writer.dataHeader(s.id, n, false));
        this.socket.write(n === length ? chunk : chunk.subarray(off, off + n));
        off += n;
        s.sendWindow -= n;
        this.connectionWindow -= n;
      }
      if (off < length) {
        s.pendingOffset = off;
        break;
      }
      queue.shift();
      s.pendingOffset = 0;
    }
    if (corked) this.socket.uncork();
    if (queue.length > 0) {
      if (s.sendWindow > 0 && !s.queuedForConnectionWindow) {
        s.queuedForConnectionWindow = true;
        this.connectionBlocked.push(s);
      }
      return;
    }
    const done = s.pendingDone!;
    s.pendingDone = undefined;
    if (this.socket.writableNeedDrain) this.drainWaiters.push(done);
    else done();
  }
}
