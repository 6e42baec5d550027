/**
 * The state of one HTTP/2 stream (RFC 9113 §5.1) and its transitions, after hyperium h2's
 * `src/proto/streams/state.rs` (the crate ztunnel runs on). Push is never enabled (a client sends
 * SETTINGS_ENABLE_PUSH 0, and a server never receives PUSH_PROMISE), so the reserved states cannot occur.
 *
 * A state is an immutable value; a transition returns the next one, or throws the `H2Error` RFC 9113 names for a
 * frame the state does not allow. States without a code are shared constants, so the transitions of a stream's
 * life allocate nothing but its end when it is reset.
 *
 *                        +--------+
 *                        |  idle  |
 *                        +--------+
 *                            |  send H / recv H
 *                            v
 *                        +--------+
 *              recv ES   |        |   send ES
 *            ,-----------|  open  |-----------.
 *           v            |        |            v
 *     +-----------+      +--------+      +-----------+
 *     |   half    |          |           |   half    |
 *     |  closed   |          | send R /  |  closed   |
 *     | (remote)  |          | recv R    |  (local)  |
 *     +-----------+          |           +-----------+
 *           |  send ES /     v      recv ES /  |
 *           |  send R /  +--------+  send R /  |
 *           `----------->| closed |<-----------'
 *              recv R    +--------+   recv R
 *
 *   H: HEADERS (with its CONTINUATIONs), ES: END_STREAM, R: RST_STREAM
 */
import { H2ErrorCode } from './frame.js';
import { connectionError, streamError, userError, type H2Error } from './h2-error.js';

/** One direction of an open stream: its HEADERS are still to come, or came and DATA may follow. */
export type StreamSide = 'awaiting-headers' | 'streaming';

/** Why a stream closed. */
export type CloseCause =
  /** END_STREAM both ways. */
  | { readonly kind: 'end-stream' }
  /** This end sent RST_STREAM `code`. */
  | { readonly kind: 'reset-sent'; readonly code: number }
  /** The peer sent RST_STREAM `code`. */
  | { readonly kind: 'reset-received'; readonly code: number }
  /** The connection ended first, or the peer's GOAWAY left the stream unprocessed: `error` says which. */
  | { readonly kind: 'connection'; readonly error: Error };

export type StreamState =
  | { readonly name: 'idle' }
  | { readonly name: 'open'; readonly local: StreamSide; readonly remote: StreamSide }
  | { readonly name: 'half-closed-local'; readonly remote: StreamSide }
  | { readonly name: 'half-closed-remote'; readonly local: StreamSide }
  /** `remoteEnded`: END_STREAM had been received before it closed (always so for `end-stream`). */
  | { readonly name: 'closed'; readonly cause: CloseCause; readonly remoteEnded: boolean };

type Open = Extract<StreamState, { name: 'open' }>;
type HalfClosedLocal = Extract<StreamState, { name: 'half-closed-local' }>;
type HalfClosedRemote = Extract<StreamState, { name: 'half-closed-remote' }>;

export const IDLE: StreamState = Object.freeze({ name: 'idle' });
const OPEN: Readonly<Record<StreamSide, Readonly<Record<StreamSide, Open>>>> = {
  'awaiting-headers': {
    'awaiting-headers': Object.freeze({ name: 'open', local: 'awaiting-headers', remote: 'awaiting-headers' }),
    streaming: Object.freeze({ name: 'open', local: 'awaiting-headers', remote: 'streaming' }),
  },
  streaming: {
    'awaiting-headers': Object.freeze({ name: 'open', local: 'streaming', remote: 'awaiting-headers' }),
    streaming: Object.freeze({ name: 'open', local: 'streaming', remote: 'streaming' }),
  },
};
const HALF_CLOSED_LOCAL: Readonly<Record<StreamSide, HalfClosedLocal>> = {
  'awaiting-headers': Object.freeze({ name: 'half-closed-local', remote: 'awaiting-headers' }),
  streaming: Object.freeze({ name: 'half-closed-local', remote: 'streaming' }),
};
const HALF_CLOSED_REMOTE: Readonly<Record<StreamSide, HalfClosedRemote>> = {
  'awaiting-headers': Object.freeze({ name: 'half-closed-remote', local: 'awaiting-headers' }),
  streaming: Object.freeze({ name: 'half-closed-remote', local: 'streaming' }),
};
const END_STREAM: CloseCause = Object.freeze({ kind: 'end-stream' });
const CLOSED_END_STREAM: StreamState = Object.freeze({ name: 'closed', cause: END_STREAM, remoteEnded: true });

/** This end sends HEADERS (a request, or the response to one), with END_STREAM if `endStream`. */
export function sendHeaders(state: StreamState, streamId: number, endStream: boolean): StreamState {
  switch (state.name) {
    case 'idle':
      return endStream ? HALF_CLOSED_LOCAL['awaiting-headers'] : OPEN.streaming['awaiting-headers'];
    case 'open':
      if (state.local === 'awaiting-headers')
        return endStream ? HALF_CLOSED_LOCAL[state.remote] : OPEN.streaming[state.remote];
      break;
    case 'half-closed-remote':
      if (state.local === 'awaiting-headers') return endStream ? CLOSED_END_STREAM : HALF_CLOSED_REMOTE.streaming;
      break;
    case 'half-closed-local':
    case 'closed':
      throw userError(streamId, H2ErrorCode.STREAM_CLOSED, `stream ${streamId} can no longer send`);
  }
  throw userError(streamId, H2ErrorCode.PROTOCOL_ERROR, `stream ${streamId} has sent its HEADERS already`);
}

/**
 * This end receives HEADERS: a request (opening an idle stream), a response (`informational` for a 1xx, after which
 * the final one is still awaited), or trailers, which must end the stream (§8.1).
 */
export function recvHeaders(
  state: StreamState,
  streamId: number,
  endStream: boolean,
  informational = false,
): StreamState {
  if (informational && endStream)
    throw streamError(streamId, H2ErrorCode.PROTOCOL_ERROR, 'an informational response with END_STREAM');
  switch (state.name) {
    case 'idle':
      return endStream ? HALF_CLOSED_REMOTE['awaiting-headers'] : OPEN['awaiting-headers'].streaming;
    case 'open':
      if (state.remote === 'awaiting-headers' && informational) return state;
      if (state.remote === 'streaming' && !endStream) throw trailersWithoutEndStream(streamId);
      return endStream ? HALF_CLOSED_REMOTE[state.local] : OPEN[state.local].streaming;
    case 'half-closed-local':
      if (state.remote === 'awaiting-headers' && informational) return state;
      if (state.remote === 'streaming' && !endStream) throw trailersWithoutEndStream(streamId);
      return endStream ? CLOSED_END_STREAM : HALF_CLOSED_LOCAL.streaming;
    case 'half-closed-remote':
      throw streamError(streamId, H2ErrorCode.STREAM_CLOSED, 'HEADERS after END_STREAM (RFC 9113 §5.1)');
    case 'closed':
      return recvOnClosed(state, streamId, 'HEADERS');
  }
}

/**
 * This end receives DATA, the last if `endStream`. DATA before the peer's HEADERS (a response's body before the
 * response) is malformed (§8.1) and resets the stream.
 */
export function recvData(state: StreamState, streamId: number, endStream: boolean): StreamState {
  switch (state.name) {
    case 'idle':
      throw connectionError(H2ErrorCode.PROTOCOL_ERROR, `DATA on stream ${streamId}, which was never opened`);
    case 'open':
      if (state.remote === 'awaiting-headers') throw dataBeforeHeaders(streamId);
      return endStream ? HALF_CLOSED_REMOTE[state.local] : state;
    case 'half-closed-local':
      if (state.remote === 'awaiting-headers') throw dataBeforeHeaders(streamId);
      return endStream ? CLOSED_END_STREAM : state;
    case 'half-closed-remote':
      throw streamError(streamId, H2ErrorCode.STREAM_CLOSED, 'DATA after the stream ended (RFC 9113 §5.1)');
    case 'closed':
      return recvOnClosed(state, streamId, 'DATA');
  }
}

/** §8.1: a message's DATA comes after its HEADERS; DATA before them is a stream error. */
export function dataBeforeHeaders(streamId: number): H2Error {
  return streamError(streamId, H2ErrorCode.PROTOCOL_ERROR, 'DATA before HEADERS (RFC 9113 §8.1)');
}

/** §8.1: HEADERS after the first ones are trailers, which end the stream. */
function trailersWithoutEndStream(streamId: number): Error {
  return streamError(streamId, H2ErrorCode.PROTOCOL_ERROR, 'trailers without END_STREAM (RFC 9113 §8.1)');
}

/**
 * §5.1 closed: frames still in flight after our RST_STREAM are ignored; after the peer's RST_STREAM they are a stream
 * error, after END_STREAM both ways a connection error, each STREAM_CLOSED. A stream its connection ended gets none.
 */
function recvOnClosed(state: Extract<StreamState, { name: 'closed' }>, streamId: number, frame: string): StreamState {
  switch (state.cause.kind) {
    case 'reset-sent':
    case 'connection':
      return state;
    case 'reset-received':
      throw streamError(streamId, H2ErrorCode.STREAM_CLOSED, `${frame} after RST_STREAM (RFC 9113 §5.1)`);
    case 'end-stream':
      throw connectionError(H2ErrorCode.STREAM_CLOSED, `${frame} on stream ${streamId}, which is closed`);
  }
}

/** This end sends END_STREAM (an empty DATA frame, or with its last DATA). */
export function sendEndStream(state: StreamState, streamId: number): StreamState {
  const refusal = sendRefusal(state, streamId);
  if (refusal !== undefined) throw refusal;
  return state.name === 'open' ? HALF_CLOSED_LOCAL[state.remote] : CLOSED_END_STREAM;
}

/**
 * Why this end may not send DATA now, or undefined when it may: its HEADERS went out and it has not ended (a server's
 * DATA before its response HEADERS would be malformed, §8.1).
 */
export function sendRefusal(state: StreamState, streamId: number): Error | undefined {
  const local = state.name === 'open' || state.name === 'half-closed-remote' ? state.local : undefined;
  if (local === 'streaming') return undefined;
  if (local === 'awaiting-headers' || state.name === 'idle')
    return userError(
      streamId,
      H2ErrorCode.PROTOCOL_ERROR,
      `stream ${streamId}: DATA before respond() would precede the response HEADERS`,
    );
  return userError(streamId, H2ErrorCode.STREAM_CLOSED, `stream ${streamId} can no longer send`);
}

/** This end sends RST_STREAM `code`; a closed stream stays as it closed. */
export function sendReset(state: StreamState, code: number): StreamState {
  if (state.name === 'closed') return state;
  return { name: 'closed', cause: { kind: 'reset-sent', code }, remoteEnded: isRemoteEnded(state) };
}

/** The peer sent RST_STREAM `code`: a connection error on a stream never opened (§5.1 idle). */
export function recvReset(state: StreamState, streamId: number, code: number): StreamState {
  if (state.name === 'idle')
    throw connectionError(H2ErrorCode.PROTOCOL_ERROR, `RST_STREAM on stream ${streamId}, which was never opened`);
  if (state.name === 'closed') return state;
  return { name: 'closed', cause: { kind: 'reset-received', code }, remoteEnded: isRemoteEnded(state) };
}

/** The stream ends without a frame of its own: its connection ended, or the peer's GOAWAY did not process it. */
export function connectionClosed(state: StreamState, error: Error): StreamState {
  if (state.name === 'closed') return state;
  return { name: 'closed', cause: { kind: 'connection', error }, remoteEnded: isRemoteEnded(state) };
}

export function isClosed(state: StreamState): boolean {
  return state.name === 'closed';
}

/** END_STREAM was received: the peer sends no more DATA, so its window is not reopened. */
export function isRemoteEnded(state: StreamState): boolean {
  return state.name === 'half-closed-remote' || (state.name === 'closed' && state.remoteEnded);
}

/** The peer's HEADERS are still to come: on a client stream, the next HEADERS is the response. */
export function awaitsRemoteHeaders(state: StreamState): boolean {
  return (state.name === 'open' || state.name === 'half-closed-local') && state.remote === 'awaiting-headers';
}

/** The RST_STREAM code that closed the stream, sent or received; undefined while it is open or if it closed otherwise. */
export function resetCode(state: StreamState): number | undefined {
  if (state.name !== 'closed') return undefined;
  const cause = state.cause;
  return cause.kind === 'reset-sent' || cause.kind === 'reset-received' ? cause.code : undefined;
}
