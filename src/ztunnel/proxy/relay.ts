import type { Duplex } from 'node:stream';
import { constants as h2c, type Http2Stream } from 'node:http2';

function isH2Stream(s: Duplex): s is Http2Stream {
  return 'rstCode' in s;
}

/**
 * Copies bytes both ways between an app socket and an upstream (TCP socket or HBONE stream), with half-close
 * in both directions: EOF on one side becomes FIN / END_STREAM on the other (spec §4.3). An error or reset on
 * one side tears down the other. `done` runs once, when both sides have closed.
 *
 * The hot path is Node's own `pipe`: no per-chunk callbacks, allocations or logging here.
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
  a.pipe(b);
  b.pipe(a);
}
