/** The one error an HPACK decoder raises: what was wrong and at which byte of the header block. */
import { H2ErrorCode } from '../frame.js';
import { H2Error } from '../h2-error.js';

/** RFC 9113 §4.3: a header block that cannot be decoded is a connection error COMPRESSION_ERROR. */
export function compressionError(what: string, offset: number): H2Error {
  return new H2Error(
    0,
    H2ErrorCode.COMPRESSION_ERROR,
    'library',
    `HPACK: ${what} at byte ${offset} of the header block`,
  );
}
