import { h2ErrorName } from './frame.js';

/**
 * Where an error comes from (hyperium h2's `Initiator`, plus the case it reports as an I/O error):
 * - `library`: this end found the peer breaking RFC 9113 and sends `code` in RST_STREAM on `streamId`, or in GOAWAY
 *   when `streamId` is 0 (a stream error, §5.4.2, or a connection error, §5.4.1);
 * - `remote`: the peer sent `code` in RST_STREAM or GOAWAY; a stream its GOAWAY left unprocessed (§6.8) has
 *   REFUSED_STREAM;
 * - `user`: a call on this end was refused and nothing went on the wire; `code` is the rule it broke;
 * - `connection`: the stream or call ended because its connection did (the socket closed or failed, the session
 *   was destroyed, or the connection failed with an error of its own, its `cause`); no HTTP/2 code applies.
 */
export type H2ErrorOrigin = 'library' | 'remote' | 'user' | 'connection';

/** An HTTP/2 error on stream `streamId` (0: the connection), with its RFC 9113 §7 `code` where one applies. */
export class H2Error extends Error {
  constructor(
    readonly streamId: number,
    readonly code: number | undefined,
    readonly origin: H2ErrorOrigin,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'H2Error';
  }
}

/** The peer broke a rule that ends the connection: GOAWAY with `code` (§5.4.1). */
export function connectionError(code: number, message: string): H2Error {
  return new H2Error(0, code, 'library', `${h2ErrorName(code)}: ${message}`);
}

/** The peer broke a rule that ends only stream `streamId`: RST_STREAM with `code` (§5.4.2). */
export function streamError(streamId: number, code: number, message: string): H2Error {
  return new H2Error(streamId, code, 'library', `${h2ErrorName(code)} on stream ${streamId}: ${message}`);
}

/** A call on this end that the protocol does not allow now; nothing was sent. */
export function userError(streamId: number, code: number, message: string): H2Error {
  return new H2Error(streamId, code, 'user', message);
}

/** The peer ended stream `streamId` (RST_STREAM), or the connection when it is 0 (GOAWAY), with `code`. */
export function peerError(streamId: number, code: number, message: string): H2Error {
  return new H2Error(streamId, code, 'remote', `${message}: ${h2ErrorName(code)}`);
}

/** Stream `streamId` (or a call, or the connection when it is 0) ended because its connection did. */
export function connectionEnded(streamId: number, message: string, cause?: unknown): H2Error {
  return new H2Error(streamId, undefined, 'connection', message, cause === undefined ? undefined : { cause });
}

/** One line for anything thrown, with a socket error's code (ECONNRESET...) in front of its message. */
export function describeCause(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const code = (e as NodeJS.ErrnoException).code;
  return typeof code === 'string' && !e.message.includes(code) ? `${code}: ${e.message}` : e.message;
}
