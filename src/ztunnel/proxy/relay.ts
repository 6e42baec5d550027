import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { describeError, MeshError } from '../../lib/errors.js';
import { H2ErrorCode } from '../../h2/frame.js';
import { H2Stream } from '../../h2/h2-stream.js';
import { meshErrorFromH2 } from './mesh-error-from-h2.js';

function isH2Stream(s: Duplex): s is H2Stream {
  return s instanceof H2Stream;
}

/** Chunks at least this large are bulk transfer: they are held back for one loop turn so their writes coalesce. */
export const COALESCE_MIN_CHUNK = 4096;

/**
 * Batches the writes of an HBONE stream's bytes into the app socket. The stream hands its DATA on as views of the
 * TLS socket's reads (at most one 16 KiB record each, split again where a frame header falls); written as they
 * come, every piece costs a syscall and a wake-up of the app. While bulk data flows, the socket is corked until
 * the end of the current loop turn, so all pieces from one turn leave in one writev; the app socket's buffer
 * (APP_SOCKET_HIGH_WATER_MARK) holds a turn's worth, else `pipe` stops the stream after 16 KiB. Small chunks
 * (request/response traffic) are written at once, so latency is untouched. Per relay, not per chunk: the
 * closures are made once.
 */
function coalesceWrites(from: H2Stream, to: Duplex): void {
  let corked = false;
  const uncork = (): void => {
    corked = false;
    to.uncork();
  };
  from.on('data', (chunk: Buffer) => {
    if (corked || chunk.length < COALESCE_MIN_CHUNK) return;
    corked = true;
    to.cork();
    setImmediate(uncork);
  });
}

/**
 * How an app socket may end without it being the connection's failure: the app reset or went away. ztunnel does
 * not report these either (ztunnel src/copy.rs, `ignore_io_errors`).
 */
const APP_HANGUP_CODES: ReadonlySet<string> = new Set(['ECONNRESET', 'EPIPE', 'ENOTCONN']);

/**
 * Resets a TCP peer (RST), so an app never mistakes a failed connection for a complete one (FIN). A socket whose
 * writing side already ended (its FIN is out: that direction was complete) is closed: libuv cannot reset a socket
 * after shutdown, and Node's `resetAndDestroy` would then leave it open for good.
 */
function abort(s: Duplex): void {
  if (isH2Stream(s)) s.reset();
  else if (s instanceof Socket && !s.writableEnded) s.resetAndDestroy();
  else s.destroy();
}

/**
 * Why an HBONE stream closed before it ended without an error of its own: reset with a code that is not a failure
 * of ours. CANCEL is the peer's app going away (or our own choice to stop), so it is no error.
 */
function unendedStreamError(s: H2Stream): Error | undefined {
  if (s.resetCode === H2ErrorCode.CANCEL) return undefined;
  return new MeshError(
    'ZT_ERR_HBONE_CONNECTION_LOST',
    `the HBONE stream was reset (HTTP/2 error code ${s.resetCode ?? '?'})`,
  );
}

/** A failed HBONE stream as the connection's error: its HBONE connection closed under it, or the peer reset it. */
function streamFailure(e: Error): MeshError {
  if (e instanceof MeshError && e.code === 'ZT_ERR_HBONE_CONNECTION_LOST') return e;
  return new MeshError(
    'ZT_ERR_HBONE_CONNECTION_LOST',
    `the HBONE stream failed: ${describeError(meshErrorFromH2(e))}`,
    {
      cause: e,
    },
  );
}

/**
 * Copies bytes both ways between an app socket and an upstream (TCP socket or HBONE stream), with half-close
 * in both directions: EOF on one side becomes FIN / END_STREAM on the other (ztunnel `src/proxy/h2/client.rs`). An error or reset on
 * one side resets the other: an app socket gets an RST, never a FIN, when its HBONE stream or connection failed.
 * `done` runs once, when both sides have closed, with the error that ended the connection if it failed.
 *
 * The hot path is Node's own `pipe` into the app socket and `forward` into the HBONE stream, plus one
 * allocation-free check per chunk from an HBONE stream (see `coalesceWrites`); no logging here.
 */
export function relay(a: Duplex, b: Duplex, done: (error: Error | undefined) => void): void {
  let closed = 0;
  let firstError: Error | undefined;
  const onError = (e: Error): void => {
    if (APP_HANGUP_CODES.has((e as NodeJS.ErrnoException).code ?? '')) return;
    firstError ??= e;
  };
  const onStreamError = (e: Error): void => {
    firstError ??= streamFailure(e);
  };
  a.on('error', isH2Stream(a) ? onStreamError : onError);
  b.on('error', isH2Stream(b) ? onStreamError : onError);
  const onClose = (self: Duplex, other: Duplex) => (): void => {
    // A clean HBONE stream end (END_STREAM, or NO_ERROR after it) lets the app socket finish writing; anything
    // else is a reset.
    const clean = isH2Stream(self)
      ? !self.errored && self.readableEnded && (self.resetCode === undefined || self.resetCode === H2ErrorCode.NO_ERROR)
      : !self.errored && self.readableEnded && self.writableFinished;
    if (!clean && closed === 0 && isH2Stream(self))
      firstError ??= self.errored !== null ? streamFailure(self.errored) : unendedStreamError(self);
    if (!clean && !other.destroyed) abort(other);
    if (++closed === 2) done(firstError);
  };
  const whenClosed = (self: Duplex, other: Duplex): void => {
    const handler = onClose(self, other);
    // A side that closed before the relay began (an HBONE stream reset right after its 200) ends it at once.
    if (self.closed) process.nextTick(handler);
    else self.once('close', handler);
  };
  whenClosed(a, b);
  whenClosed(b, a);
  if (isH2Stream(a) && !isH2Stream(b)) coalesceWrites(a, b);
  if (isH2Stream(b) && !isH2Stream(a)) coalesceWrites(b, a);
  forward(a, b);
  forward(b, a);
}

/**
 * How many bytes an HBONE stream may hold queued before the app socket feeding it is paused. A stream's writable
 * side buffers Node's default 16 KiB, less than one 64 KiB read from a socket, so with `pipe` the app socket would
 * be paused after every read and the stream take one read per loop turn (docs/performance.md, "App socket buffers"). With
 * this bound a loop turn takes what the app has queued (libuv reads a socket several times a turn) and the
 * session sends it in one write. The stream's own flow control still holds the bytes until the peer grants
 * window; this bounds what waits in front of it.
 */
export const STREAM_WRITE_BOUND = 256 * 1024;

/**
 * Copies `from` into `to` until `from` ends, then ends `to`, as `pipe` does, but into an HBONE stream with the
 * bound above in place of the stream's buffer. After `to` closes, `from` is no longer read (as `unpipe` leaves it).
 * The handlers are made once per direction, not per chunk.
 */
function forward(from: Duplex, to: Duplex): void {
  if (!isH2Stream(to)) {
    from.pipe(to);
    return;
  }
  const onData = (chunk: Buffer): void => {
    if (!to.write(chunk) && to.writableLength >= STREAM_WRITE_BOUND) from.pause();
  };
  from.on('data', onData);
  to.on('drain', () => from.resume());
  from.once('end', () => to.end());
  to.once('close', () => {
    from.off('data', onData);
    from.pause();
  });
  // A socket handed over paused (SOCKS5 replies before relaying) flows from here, as `pipe` would make it.
  from.resume();
}
