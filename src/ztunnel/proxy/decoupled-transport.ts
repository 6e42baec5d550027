import { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';

/**
 * Room for what flow control does not count: frame headers (9 bytes a frame, under 1% at the 16 KiB frames peers
 * send in bulk; a quarter of the window also covers DATA frames down to ~40 bytes) and control frames (HEADERS,
 * WINDOW_UPDATE, PING, SETTINGS, RST_STREAM), which a well-behaved peer sends by the dozen, not by the megabyte.
 */
const FRAMING_SLACK_DIVISOR = 4;
const CONTROL_FRAME_SLACK = 1024 * 1024;

/** What a DecoupledTransport may hold in each direction, in bytes. */
export interface TransportBounds {
  /** Read from TLS and not yet taken by the HTTP/2 session: what the peer may send before we grant more. */
  readonly read: number;
  /** Accepted from the HTTP/2 session and queued in the TLS socket: what the peer lets us send before it grants more. */
  readonly write: number;
}

/** Both windows are ours and the peer's (ztunnel peers run with the same HTTP2_* settings). */
export function transportBounds(connectionWindowSize: number): TransportBounds {
  const bound = connectionWindowSize + Math.ceil(connectionWindowSize / FRAMING_SLACK_DIVISOR) + CONTROL_FRAME_SLACK;
  return Object.freeze({ read: bound, write: bound });
}

/**
 * The transport an HBONE HTTP/2 session runs on: the TLS socket, with reading and writing decoupled.
 *
 * Node's native HTTP/2 session stops reading its socket while one of its own writes is in progress and resumes
 * only when that write completes (src/node_http2.cc, `Http2Session::MaybeStopReading`). With Istio's windows
 * (16 MiB a connection) more data is in flight than the kernel's socket buffers hold, so under load in both
 * directions both ends of an HBONE connection have a write pending, both stop reading, and neither write can
 * complete: the connection stops, PINGs included (docs/performance.md, "HBONE transport").
 *
 * This duplex completes the session's writes at once while the bytes queued in the TLS socket stay within
 * `bounds.write`, and keeps reading the TLS socket while what the session has not taken stays within
 * `bounds.read`. Both bounds cover what the HTTP/2 windows allow, so within flow control neither direction ever
 * waits for the other; past them (a peer ignoring flow control) ordinary backpressure applies. Node's streams
 * have no such component; a PassThrough pair would add a transform and a pipe per chunk.
 *
 * Hot path: no allocation, logging or promise per chunk; the handlers are bound once.
 */
export class DecoupledTransport extends Duplex {
  private writeWaiting: ((error?: Error | null) => void) | undefined;
  private failed = false;

  constructor(
    readonly tls: TLSSocket,
    private readonly bounds: TransportBounds,
  ) {
    super({ allowHalfOpen: true, readableHighWaterMark: bounds.read, writableHighWaterMark: bounds.write, decodeStrings: false });
    tls.on('data', this.onData);
    tls.on('end', this.onEnd);
    tls.on('drain', this.onDrain);
    tls.on('error', this.onError);
    tls.on('close', this.onClose);
  }

  override _read(): void {
    this.tls.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.closedForWriting(callback)) return;
    this.tls.write(chunk);
    this.completeOrWait(callback);
  }

  override _writev(chunks: { chunk: Buffer }[], callback: (error?: Error | null) => void): void {
    if (this.closedForWriting(callback)) return;
    this.tls.cork();
    for (const c of chunks) this.tls.write(c.chunk);
    this.tls.uncork();
    this.completeOrWait(callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.tls.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // A write still waiting is cancelled by the stream that wrote it (its close completes pending writes).
    this.writeWaiting = undefined;
    this.tls.destroy(error ?? undefined);
    callback(error);
  }

  /**
   * A write after the TLS socket closed fails as a native socket's would (EPIPE): HTTP/2 then ends the session,
   * instead of waiting for the peer after a GOAWAY that never left.
   */
  private closedForWriting(callback: (error?: Error | null) => void): boolean {
    if (!this.tls.destroyed && !this.tls.writableEnded) return false;
    callback(Object.assign(new Error('write after the HBONE TLS connection closed'), { code: 'EPIPE' }));
    return true;
  }

  private completeOrWait(callback: (error?: Error | null) => void): void {
    if (this.tls.writableLength <= this.bounds.write) callback();
    else this.writeWaiting = callback;
  }

  private releaseWriter(): void {
    const cb = this.writeWaiting;
    this.writeWaiting = undefined;
    cb?.();
  }

  private readonly onData = (chunk: Buffer): void => {
    if (!this.push(chunk)) this.tls.pause();
  };

  /**
   * The peer ended the connection: no HTTP/2 frame can follow, so once the session has what was buffered the
   * connection fails through the session (see `fail`), and its open streams with it. A session that has stopped
   * reading for good (after a protocol error it never reads again) would never take the rest: if it is not reading
   * a loop turn later, the connection fails at once.
   */
  private readonly onEnd = (): void => {
    this.push(null);
    if (this.readableLength === 0) this.onPeerClosed();
    else {
      this.once('end', this.onPeerClosed);
      setImmediate(this.checkEndDelivered);
    }
  };

  private readonly checkEndDelivered = (): void => {
    if (!this.readableEnded && !this.readableFlowing) this.onPeerClosed();
  };

  private readonly onPeerClosed = (): void => {
    this.fail(Object.assign(new Error('the peer closed the HBONE connection'), { code: 'ECONNRESET' }));
  };

  private readonly onDrain = (): void => {
    this.releaseWriter();
  };

  private readonly onError = (e: Error): void => {
    this.fail(e);
  };

  /** After a clean end the session still reads what is buffered here; any other close fails the transport. */
  private readonly onClose = (): void => {
    if (!this.destroyed && !this.tls.readableEnded) this.fail(Object.assign(new Error('the HBONE TLS connection closed'), { code: 'ECONNRESET' }));
  };

  /**
   * Fails the connection through the HTTP/2 session, which then closes this transport: destroying the transport
   * first would leave Node's stream wrapper without a handle, and it drops (never completes) the session's last
   * writes, which keeps a process from exiting.
   */
  private fail(error: Error): void {
    if (this.failed || this.destroyed) return;
    this.failed = true;
    if (this.listenerCount('error') > 0) this.emit('error', error);
    else this.destroy(error);
  }
}

/** Node's own default for `maxSessionMemory` (MB); a floor, so small windows never get less than Node would give. */
const NODE_DEFAULT_SESSION_MEMORY_MB = 10;

/**
 * `maxSessionMemory` (MB) for an HBONE session on a DecoupledTransport. Node counts against it what the session
 * holds itself: frames it has produced and not yet handed to the transport, and input it has read and not yet
 * processed. The transport takes up to `bounds.write` at once and delivers at most `bounds.read`, so the two bounds
 * are what a session can legitimately hold; anything past them is a peer to refuse (ENHANCE_YOUR_CALM).
 */
export function maxSessionMemoryMb(bounds: TransportBounds): number {
  return Math.max(NODE_DEFAULT_SESSION_MEMORY_MB, Math.ceil((bounds.read + bounds.write) / (1024 * 1024)));
}
