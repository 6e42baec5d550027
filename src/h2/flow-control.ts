import { H2ErrorCode, MAX_WINDOW_SIZE } from './frame.js';
import { connectionError, streamError, type H2Error } from './h2-error.js';
import type { H2Stream } from './h2-stream.js';
import { ReceiveWindow } from './receive-window.js';
import type { SendScheduler } from './send-scheduler.js';
import { isRemoteEnded } from './stream-state.js';

/**
 * Flow control of one connection (RFC 9113 §5.2, §6.9), both ways. Receiving: DATA counts against the connection's
 * window and its stream's, and the credit returns (WINDOW_UPDATE) as the consumer takes the data, in batches
 * (ReceiveWindow). Sending: the peer's WINDOW_UPDATEs and SETTINGS_INITIAL_WINDOW_SIZE grow the windows the
 * SendScheduler spends, and wake the writes that waited for them.
 */
export class FlowControl {
  private readonly connectionReceive: ReceiveWindow;

  constructor(
    private readonly send: SendScheduler,
    connectionWindowSize: number,
  ) {
    this.connectionReceive = new ReceiveWindow(connectionWindowSize);
  }

  /** A DATA frame of `frameLength` bytes (padding included) arrived; more than the connection window allows ends it. */
  receiveOnConnection(frameLength: number): void {
    if (!this.connectionReceive.receive(frameLength))
      throw connectionError(
        H2ErrorCode.FLOW_CONTROL_ERROR,
        `a ${frameLength}-byte DATA frame exceeds the connection window`,
      );
  }

  /** The same frame, counted against its stream's window. */
  receiveOnStream(s: H2Stream, frameLength: number): void {
    if (!s.receiveWindow.receive(frameLength))
      throw connectionError(
        H2ErrorCode.FLOW_CONTROL_ERROR,
        `a ${frameLength}-byte DATA frame exceeds stream ${s.id}'s window`,
      );
  }

  /** `n` bytes of stream `s` left our hands: credit back to the stream (unless the peer has ended it) and connection. */
  release(s: H2Stream, n: number): void {
    const streamIncrement = isRemoteEnded(s.state) ? 0 : s.receiveWindow.release(n);
    this.send.writeWindowUpdates(s.id, streamIncrement, this.connectionReceive.release(n));
  }

  /** `n` received bytes no stream will take (it is gone): credit back to the connection only. */
  releaseConnection(n: number): void {
    const increment = this.connectionReceive.release(n);
    if (increment > 0) this.send.writeWindowUpdates(0, 0, increment);
  }

  /** The consumer read on: the credit held back while it did not comes back. */
  releaseHeld(s: H2Stream): void {
    if (s.heldCredit === 0) return;
    const n = s.heldCredit;
    s.heldCredit = 0;
    this.release(s, n);
  }

  /** The stream is gone with data its reader never took: that credit goes back to the connection. */
  releaseHeldToConnection(s: H2Stream): void {
    if (s.heldCredit === 0) return;
    const n = s.heldCredit;
    s.heldCredit = 0;
    this.releaseConnection(n);
  }

  /** WINDOW_UPDATE on stream 0: past 2^31-1 is a connection error (§6.9.1). */
  growConnectionWindow(increment: number): void {
    this.send.connectionWindow += increment;
    if (this.send.connectionWindow > MAX_WINDOW_SIZE)
      throw connectionError(H2ErrorCode.FLOW_CONTROL_ERROR, 'WINDOW_UPDATE pushes the connection window past 2^31-1');
    this.send.resumeBlocked();
  }

  /** WINDOW_UPDATE on stream `s`: past 2^31-1 is a stream error (§6.9.1), returned for the caller to reset it. */
  growStreamWindow(s: H2Stream, increment: number): H2Error | undefined {
    s.sendWindow += increment;
    if (s.sendWindow > MAX_WINDOW_SIZE)
      return streamError(s.id, H2ErrorCode.FLOW_CONTROL_ERROR, 'WINDOW_UPDATE pushes the stream window past 2^31-1');
    this.send.resume(s);
    return undefined;
  }

  /** §6.9.2: a new SETTINGS_INITIAL_WINDOW_SIZE moves every open stream's send window by the difference. */
  moveStreamWindows(streams: Iterable<H2Stream>, delta: number): void {
    for (const s of streams) {
      s.sendWindow += delta;
      if (s.sendWindow > MAX_WINDOW_SIZE)
        throw connectionError(
          H2ErrorCode.FLOW_CONTROL_ERROR,
          `SETTINGS_INITIAL_WINDOW_SIZE pushes stream ${s.id}'s window past 2^31-1`,
        );
    }
  }
}
