import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { H2ErrorCode } from './frame.js';
import { connectionEnded, H2Error, type H2ErrorOrigin } from './h2-error.js';
import {
  awaitsRemoteHeaders,
  connectionClosed,
  IDLE,
  isClosed,
  isRemoteEnded,
  recvData,
  recvHeaders,
  recvReset,
  resetCode,
  sendEndStream,
  sendHeaders,
  sendRefusal,
  sendReset,
  type CloseCause,
  type StreamSide,
  type StreamState,
} from './stream-state.js';

const ID = 5;
const AWAITING: StreamSide = 'awaiting-headers';
const STREAMING: StreamSide = 'streaming';
const open = (local: StreamSide, remote: StreamSide): StreamState => ({ name: 'open', local, remote });
const halfClosedLocal = (remote: StreamSide): StreamState => ({ name: 'half-closed-local', remote });
const halfClosedRemote = (local: StreamSide): StreamState => ({ name: 'half-closed-remote', local });
const closed = (cause: CloseCause, remoteEnded: boolean): StreamState => ({ name: 'closed', cause, remoteEnded });
const END_STREAM = closed({ kind: 'end-stream' }, true);
const RESET_SENT = closed({ kind: 'reset-sent', code: H2ErrorCode.CANCEL }, false);
const RESET_RECEIVED = closed({ kind: 'reset-received', code: H2ErrorCode.CANCEL }, false);
const CONNECTION_ENDED = closed({ kind: 'connection', error: new Error('socket closed') }, false);
const SIDES = [AWAITING, STREAMING];

/** The transition throws the H2Error RFC 9113 names: its code, and whether it ends the stream or the connection. */
function throwsH2(f: () => unknown, code: number, scope: 'stream' | 'connection', origin: H2ErrorOrigin): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof H2Error, String(e));
    assert.deepEqual(
      { code: e.code, streamId: e.streamId, origin: e.origin },
      { code, streamId: scope === 'stream' ? ID : 0, origin },
    );
    return true;
  });
}

describe('sending HEADERS (RFC 9113 §5.1: send H)', () => {
  const LEGAL: [string, StreamState, boolean, StreamState][] = [
    ['a request opens an idle stream', IDLE, false, open(STREAMING, AWAITING)],
    ['a request with END_STREAM half-closes it at once', IDLE, true, halfClosedLocal(AWAITING)],
    ['a response on a half-closed (remote) stream', halfClosedRemote(AWAITING), false, halfClosedRemote(STREAMING)],
    [
      'a response with END_STREAM on a half-closed (remote) stream closes it',
      halfClosedRemote(AWAITING),
      true,
      END_STREAM,
    ],
  ];
  for (const remote of SIDES) {
    LEGAL.push([
      `a response on an open stream (remote ${remote})`,
      open(AWAITING, remote),
      false,
      open(STREAMING, remote),
    ]);
    LEGAL.push([
      `a response with END_STREAM on an open stream (remote ${remote})`,
      open(AWAITING, remote),
      true,
      halfClosedLocal(remote),
    ]);
  }
  for (const [what, from, endStream, to] of LEGAL)
    test(what, () => assert.deepEqual(sendHeaders(from, ID, endStream), to));

  test('HEADERS a second time is refused (PROTOCOL_ERROR), nothing sent', () => {
    for (const from of [open(STREAMING, AWAITING), open(STREAMING, STREAMING), halfClosedRemote(STREAMING)])
      throwsH2(() => sendHeaders(from, ID, false), H2ErrorCode.PROTOCOL_ERROR, 'stream', 'user');
  });

  test('HEADERS on a stream this end ended or that closed is refused (STREAM_CLOSED)', () => {
    for (const from of [halfClosedLocal(AWAITING), END_STREAM, RESET_SENT, RESET_RECEIVED, CONNECTION_ENDED])
      throwsH2(() => sendHeaders(from, ID, false), H2ErrorCode.STREAM_CLOSED, 'stream', 'user');
  });
});

describe('receiving HEADERS (§5.1: recv H; §8.1 responses and trailers)', () => {
  const LEGAL: [string, StreamState, boolean, boolean, StreamState][] = [
    ['a request opens an idle stream', IDLE, false, false, open(AWAITING, STREAMING)],
    ['a request with END_STREAM half-closes it (remote)', IDLE, true, false, halfClosedRemote(AWAITING)],
    ['a response after our END_STREAM', halfClosedLocal(AWAITING), false, false, halfClosedLocal(STREAMING)],
    ['a response with END_STREAM after ours closes the stream', halfClosedLocal(AWAITING), true, false, END_STREAM],
    [
      'an informational response leaves the final one awaited',
      halfClosedLocal(AWAITING),
      false,
      true,
      halfClosedLocal(AWAITING),
    ],
    ['trailers after our END_STREAM close the stream', halfClosedLocal(STREAMING), true, false, END_STREAM],
  ];
  for (const local of SIDES) {
    LEGAL.push([
      `a response on an open stream (local ${local})`,
      open(local, AWAITING),
      false,
      false,
      open(local, STREAMING),
    ]);
    LEGAL.push([
      `a response with END_STREAM (local ${local})`,
      open(local, AWAITING),
      true,
      false,
      halfClosedRemote(local),
    ]);
    LEGAL.push([
      `an informational response on an open stream (local ${local})`,
      open(local, AWAITING),
      false,
      true,
      open(local, AWAITING),
    ]);
    LEGAL.push([`trailers (local ${local})`, open(local, STREAMING), true, false, halfClosedRemote(local)]);
  }
  for (const [what, from, endStream, informational, to] of LEGAL)
    test(what, () => assert.deepEqual(recvHeaders(from, ID, endStream, informational), to));

  test('trailers without END_STREAM are a stream error PROTOCOL_ERROR (§8.1)', () => {
    for (const from of [open(STREAMING, STREAMING), open(AWAITING, STREAMING), halfClosedLocal(STREAMING)])
      throwsH2(() => recvHeaders(from, ID, false), H2ErrorCode.PROTOCOL_ERROR, 'stream', 'library');
  });

  test('an informational response with END_STREAM is a stream error PROTOCOL_ERROR (§8.1)', () => {
    throwsH2(
      () => recvHeaders(open(STREAMING, AWAITING), ID, true, true),
      H2ErrorCode.PROTOCOL_ERROR,
      'stream',
      'library',
    );
  });

  test('HEADERS after the peer ended the stream (half-closed remote) is a stream error STREAM_CLOSED', () => {
    for (const local of SIDES)
      throwsH2(() => recvHeaders(halfClosedRemote(local), ID, true), H2ErrorCode.STREAM_CLOSED, 'stream', 'library');
  });
});

describe('receiving DATA (§5.1: recv ES)', () => {
  for (const local of [STREAMING, AWAITING] as const) {
    test(`open (local ${local}, remote streaming): DATA keeps it open, END_STREAM half-closes it (remote)`, () => {
      assert.deepEqual(recvData(open(local, STREAMING), ID, false), open(local, STREAMING));
      assert.deepEqual(recvData(open(local, STREAMING), ID, true), halfClosedRemote(local));
    });
  }
  test('DATA before the response HEADERS is a stream error PROTOCOL_ERROR (§8.1 malformed), open or half-closed (local)', () => {
    for (const state of [open(STREAMING, AWAITING), halfClosedLocal(AWAITING)])
      for (const endStream of [false, true])
        throwsH2(() => recvData(state, ID, endStream), H2ErrorCode.PROTOCOL_ERROR, 'stream', 'library');
  });
  test('half-closed (local): DATA keeps it so, END_STREAM closes it', () => {
    assert.deepEqual(recvData(halfClosedLocal(STREAMING), ID, false), halfClosedLocal(STREAMING));
    assert.deepEqual(recvData(halfClosedLocal(STREAMING), ID, true), END_STREAM);
  });

  test('DATA on an idle stream is a connection error PROTOCOL_ERROR (§5.1 idle)', () => {
    throwsH2(() => recvData(IDLE, ID, false), H2ErrorCode.PROTOCOL_ERROR, 'connection', 'library');
  });

  test('DATA after the peer ended the stream (half-closed remote) is a stream error STREAM_CLOSED', () => {
    throwsH2(() => recvData(halfClosedRemote(STREAMING), ID, false), H2ErrorCode.STREAM_CLOSED, 'stream', 'library');
  });
});

describe('frames on a closed stream (§5.1 closed)', () => {
  test('after our RST_STREAM, what the peer had in flight is ignored', () => {
    assert.equal(recvData(RESET_SENT, ID, true), RESET_SENT);
    assert.equal(recvHeaders(RESET_SENT, ID, true), RESET_SENT);
  });

  test("after the peer's RST_STREAM, any frame is a stream error STREAM_CLOSED", () => {
    throwsH2(() => recvData(RESET_RECEIVED, ID, false), H2ErrorCode.STREAM_CLOSED, 'stream', 'library');
    throwsH2(() => recvHeaders(RESET_RECEIVED, ID, true), H2ErrorCode.STREAM_CLOSED, 'stream', 'library');
  });

  test('after END_STREAM both ways, any frame is a connection error STREAM_CLOSED', () => {
    throwsH2(() => recvData(END_STREAM, ID, false), H2ErrorCode.STREAM_CLOSED, 'connection', 'library');
    throwsH2(() => recvHeaders(END_STREAM, ID, true), H2ErrorCode.STREAM_CLOSED, 'connection', 'library');
  });

  test('a stream its connection ended takes nothing more', () => {
    assert.equal(recvData(CONNECTION_ENDED, ID, false), CONNECTION_ENDED);
  });
});

describe('sending END_STREAM and DATA (§5.1: send ES)', () => {
  test('open: END_STREAM half-closes it (local); half-closed (remote): it closes', () => {
    for (const remote of SIDES) assert.deepEqual(sendEndStream(open(STREAMING, remote), ID), halfClosedLocal(remote));
    assert.deepEqual(sendEndStream(halfClosedRemote(STREAMING), ID), END_STREAM);
  });

  test('DATA may go out once HEADERS went and until END_STREAM', () => {
    for (const s of [open(STREAMING, AWAITING), open(STREAMING, STREAMING), halfClosedRemote(STREAMING)])
      assert.equal(sendRefusal(s, ID), undefined);
  });

  test('DATA or END_STREAM before our HEADERS is refused (PROTOCOL_ERROR: it would precede the response)', () => {
    for (const s of [IDLE, open(AWAITING, STREAMING), halfClosedRemote(AWAITING)]) {
      throwsH2(() => sendEndStream(s, ID), H2ErrorCode.PROTOCOL_ERROR, 'stream', 'user');
      assert.equal((sendRefusal(s, ID) as H2Error).code, H2ErrorCode.PROTOCOL_ERROR);
    }
  });

  test('DATA or END_STREAM after ours, or on a closed stream, is refused (STREAM_CLOSED)', () => {
    for (const s of [halfClosedLocal(STREAMING), END_STREAM, RESET_SENT, RESET_RECEIVED, CONNECTION_ENDED]) {
      throwsH2(() => sendEndStream(s, ID), H2ErrorCode.STREAM_CLOSED, 'stream', 'user');
      assert.equal((sendRefusal(s, ID) as H2Error).code, H2ErrorCode.STREAM_CLOSED);
    }
  });
});

describe('RST_STREAM and the end of the connection (§5.1: send R / recv R)', () => {
  const LIVE = [
    open(STREAMING, STREAMING),
    open(AWAITING, STREAMING),
    halfClosedLocal(AWAITING),
    halfClosedRemote(STREAMING),
  ];

  test('sending RST_STREAM closes any stream not closed, keeping the code and whether the peer had ended', () => {
    for (const s of LIVE) {
      const next = sendReset(s, H2ErrorCode.INTERNAL_ERROR);
      assert.deepEqual(next, closed({ kind: 'reset-sent', code: H2ErrorCode.INTERNAL_ERROR }, isRemoteEnded(s)));
      assert.equal(resetCode(next), H2ErrorCode.INTERNAL_ERROR);
    }
  });

  test('receiving RST_STREAM closes any stream not closed, with the peer code', () => {
    for (const s of LIVE) {
      const next = recvReset(s, ID, H2ErrorCode.CONNECT_ERROR);
      assert.deepEqual(next, closed({ kind: 'reset-received', code: H2ErrorCode.CONNECT_ERROR }, isRemoteEnded(s)));
      assert.equal(resetCode(next), H2ErrorCode.CONNECT_ERROR);
    }
  });

  test('RST_STREAM on an idle stream is a connection error PROTOCOL_ERROR (§5.1 idle)', () => {
    throwsH2(() => recvReset(IDLE, ID, H2ErrorCode.CANCEL), H2ErrorCode.PROTOCOL_ERROR, 'connection', 'library');
  });

  test('a closed stream stays as it closed: a later reset, or the connection ending, changes nothing', () => {
    for (const s of [END_STREAM, RESET_SENT, RESET_RECEIVED, CONNECTION_ENDED]) {
      assert.equal(sendReset(s, H2ErrorCode.CANCEL), s);
      assert.equal(recvReset(s, ID, H2ErrorCode.CANCEL), s);
      assert.equal(connectionClosed(s, new Error('later')), s);
    }
  });

  test('the connection ending closes a stream without a reset code', () => {
    const error = connectionEnded(ID, 'the socket closed');
    const next = connectionClosed(open(STREAMING, STREAMING), error);
    assert.deepEqual(next, closed({ kind: 'connection', error }, false));
    assert.equal(resetCode(next), undefined);
    assert.equal(isClosed(next), true);
  });
});

describe('what the session reads of a state', () => {
  test('the peer has ended: half-closed (remote), closed by END_STREAM, or reset after its END_STREAM', () => {
    assert.equal(isRemoteEnded(halfClosedRemote(STREAMING)), true);
    assert.equal(isRemoteEnded(END_STREAM), true);
    assert.equal(isRemoteEnded(sendReset(halfClosedRemote(STREAMING), H2ErrorCode.CANCEL)), true);
    assert.equal(isRemoteEnded(open(STREAMING, STREAMING)), false);
    assert.equal(isRemoteEnded(RESET_RECEIVED), false);
  });

  test("the peer's HEADERS are awaited on a stream this end opened until its final response", () => {
    const requested = sendHeaders(IDLE, ID, false);
    assert.equal(awaitsRemoteHeaders(requested), true);
    assert.equal(awaitsRemoteHeaders(recvHeaders(requested, ID, false, true)), true);
    assert.equal(awaitsRemoteHeaders(recvHeaders(requested, ID, false)), false);
    assert.equal(awaitsRemoteHeaders(recvHeaders(IDLE, ID, false)), false, 'a request opens the remote side');
  });

  test('a reset code only for a reset', () => {
    assert.equal(resetCode(open(STREAMING, STREAMING)), undefined);
    assert.equal(resetCode(END_STREAM), undefined);
  });
});
