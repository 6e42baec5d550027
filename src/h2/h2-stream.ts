import { Duplex } from 'node:stream';
import { H2ErrorCode } from './frame.js';
import type { HeaderField } from './header-block.js';
import { ReceiveWindow } from './receive-window.js';
import { IDLE, isClosed, resetCode, type StreamState } from './stream-state.js';

/** What a stream asks of its session; the session implements it (kept apart so a stream stays a plain Duplex). */
export interface StreamHost {
  writeData(stream: H2Stream, chunk: Buffer, done: (error?: Error | null) => void): void;
  /** Several writes the stream buffered while one was in progress, sent together. */
  writeDataBatch(stream: H2Stream, chunks: readonly { chunk: Buffer }[], done: (error?: Error | null) => void): void;
  endData(stream: H2Stream, done: (error?: Error | null) => void): void;
  /** The consumer read what it was handed: return the held-back receive credit. */
  resumeReading(stream: H2Stream): void;
  respond(stream: H2Stream, status: number, fields: readonly HeaderField[], endStream: boolean): void;
  /** This end resets the stream with RST_STREAM `code`, unless HTTP/2 has closed it already. */
  reset(stream: H2Stream, code: number): void;
  /** The Duplex was destroyed: if HTTP/2 had not closed the stream, it is reset on the wire (CANCEL). */
  destroyed(stream: H2Stream): void;
}

/**
 * One HTTP/2 stream as a Duplex (RFC 9113 §5.1): DATA the peer sends is readable, END_STREAM ends the readable
 * side; writes become DATA under flow control, and `end()` sends END_STREAM (half-close). A consumer that stops
 * reading stops returning credit, so the peer stops sending once the stream's window is used: backpressure
 * reaches the remote sender. ztunnel returns credit as DATA arrives (ztunnel `src/proxy/h2.rs`), which its copy
 * loop bounds by reading only as fast as it writes; here the readable side would buffer without limit behind a
 * slow app, so credit returns as the consumer takes the data. Either is the same on the wire. Readable chunks are
 * views of the TLS socket's chunks, not copies.
 *
 * Client side: `response` is emitted with the peer's response head. Server side: `respond()` answers.
 */
export class H2Stream extends Duplex {
  /** Where the stream is in RFC 9113 §5.1; the session moves it, with the transitions of stream-state.ts only. */
  state: StreamState = IDLE;
  /** What the peer may still send on this stream. */
  readonly receiveWindow: ReceiveWindow;
  /** What we may still send on this stream (may go negative after the peer lowers INITIAL_WINDOW_SIZE, §6.9.2). */
  sendWindow: number;
  /** Bytes pushed while the readable side was over its high-water mark, released when the consumer reads on. */
  heldCredit = 0;
  /** The chunks of the write in progress not yet framed (the first sent up to `pendingOffset`), and its callback. */
  readonly sendQueue: Buffer[] = [];
  pendingOffset = 0;
  pendingDone: ((error?: Error | null) => void) | undefined;
  /** Queued on the session for connection-level window. */
  queuedForConnectionWindow = false;
  /** DATA payload bytes received from the peer, and handed to this stream to send (as a socket's bytesRead/Written). */
  bytesReceived = 0;
  bytesSent = 0;

  constructor(
    private readonly host: StreamHost,
    readonly id: number,
    receiveWindowSize: number,
    sendWindow: number,
  ) {
    super({ allowHalfOpen: true });
    this.receiveWindow = new ReceiveWindow(receiveWindowSize);
    this.sendWindow = sendWindow;
  }

  /** HTTP/2 closed the stream (§5.1 closed): END_STREAM both ways, a reset, or its connection ended. */
  get streamClosed(): boolean {
    return isClosed(this.state);
  }

  /** The RST_STREAM code that ended the stream, sent or received; undefined while it is open or after a clean close. */
  get resetCode(): number | undefined {
    return resetCode(this.state);
  }

  /** Server side: answers the request (for HBONE, 200 once the upstream connection is up). */
  respond(status: number, fields: readonly HeaderField[] = [], endStream = false): void {
    this.host.respond(this, status, fields, endStream);
  }

  /**
   * Ends the stream abruptly with RST_STREAM `code` (CANCEL unless given) and destroys it without an error: this
   * end chose to stop, so nothing failed here. A stream already closed is only destroyed.
   */
  reset(code: number = H2ErrorCode.CANCEL): void {
    if (this.destroyed) return;
    this.host.reset(this, code);
    this.destroy();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.bytesSent += chunk.length;
    this.host.writeData(this, chunk, done);
  }

  override _writev(chunks: { chunk: Buffer }[], done: (error?: Error | null) => void): void {
    for (const c of chunks) this.bytesSent += c.chunk.length;
    this.host.writeDataBatch(this, chunks, done);
  }

  override _final(done: (error?: Error | null) => void): void {
    this.host.endData(this, done);
  }

  override _read(): void {
    this.host.resumeReading(this);
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.host.destroyed(this);
    done(error);
  }
}
