/** The one error an HPACK decoder raises: what was wrong and at which byte of the header block. */
import { MeshError } from '../../lib/errors.js';

export function compressionError(what: string, offset: number): MeshError {
  return new MeshError('H2_ERR_COMPRESSION', `HPACK: ${what} at byte ${offset} of the header block`);
}
