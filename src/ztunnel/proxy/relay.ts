import type { Duplex } from 'node:stream';
import { constants as h2c, type Http2Stream } from 'node:http2';

function isH2Stream(s: Duplex): s is Http2Stream {
  return 'rstCode' in s;
}

/** Chunks at least this large are bulk transfer: they are held back for one loop turn so their writes coalesce. */
export const COALESCE_MIN_CHUNK = 4096;

/**
 * Batches the writes of an HBONE stream's bytes into the app socket. A full DATA frame (16384 bytes + 9 of header)
 * never fits one 16 KiB TLS record, so Node hands the stream each frame in two pieces; written as they come, every
 * piece costs a syscall and a wake-up of the app (half of them a few bytes long). While bulk data flows, the socket
 * is corked until the end of the current loop turn, so all pieces from one read leave in one writev. Small
 * chunks (request/response traffic) are written at once, so latency is untouched. Per relay, not per chunk: the
 * closures are made once.
 */
function coalesceWrites(from: Http2Stream, to: Duplex): void {
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
 * Copies bytes both ways between an app socket and an upstream (TCP socket or HBONE stream), with half-close
 * in both directions: EOF on one side becomes FIN / END_STREAM on the other (spec §4.3). An error or reset on
 * one side tears down the other. `done` runs once, when both sides have closed.
 *
 * The hot path is Node's own `pipe`, plus one allocation-free check per chunk from an HBONE stream (see
 * `coalesceWrites`); no logging here.
 */
export function relay(a: Duplex, b: Duplex, done: (error: Error | undefined) => void): void {
  let closed = 0;
  let firstError: Error | undefined;
  const onError = (e: Error): void => {
    firstError ??= e;
  };
  a.on('error', onError);
  b.on('error', onError);
  const onClose = (self: Duplex, other: Duplex) => (): void => {
    if (!other.destroyed) {
      // A clean HBONE stream end (NO_ERROR) lets the app socket finish writing; anything else is a reset.
      const clean = isH2Stream(self) ? self.rstCode === h2c.NGHTTP2_NO_ERROR && self.readableEnded : !self.errored && self.readableEnded && self.writableFinished;
      if (!clean) {
        if (isH2Stream(other)) other.close(h2c.NGHTTP2_CANCEL);
        else other.destroy();
      }
    }
    if (++closed === 2) done(firstError);
  };
  a.once('close', onClose(a, b));
  b.once('close', onClose(b, a));
  if (isH2Stream(a) && !isH2Stream(b)) coalesceWrites(a, b);
  if (isH2Stream(b) && !isH2Stream(a)) coalesceWrites(b, a);
  a.pipe(b);
  b.pipe(a);
}
