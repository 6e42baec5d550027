/**
 * Where HBONE's HTTP/2 layer (src/h2) meets ztunnel's error catalogue: an `H2Error` becomes the MeshError whose
 * `H2_ERR_*` code docs/errors.md documents, so logs, access logs and errors ztunnel reports carry a stable code.
 */
import { MeshError, type ErrorCode } from '../../lib/errors.js';
import { H2ErrorCode } from '../../h2/frame.js';
import { H2Error } from '../../h2/h2-error.js';

/** The catalogue code of each HTTP/2 error code this end raises; any other is reported as a protocol error. */
const CATALOGUE: Readonly<Partial<Record<number, ErrorCode>>> = {
  [H2ErrorCode.PROTOCOL_ERROR]: 'H2_ERR_PROTOCOL',
  [H2ErrorCode.FLOW_CONTROL_ERROR]: 'H2_ERR_FLOW_CONTROL',
  [H2ErrorCode.SETTINGS_TIMEOUT]: 'H2_ERR_SETTINGS_TIMEOUT',
  [H2ErrorCode.FRAME_SIZE_ERROR]: 'H2_ERR_FRAME_SIZE',
  [H2ErrorCode.STREAM_CLOSED]: 'H2_ERR_STREAM_CLOSED',
  [H2ErrorCode.REFUSED_STREAM]: 'H2_ERR_REFUSED_STREAM',
  [H2ErrorCode.COMPRESSION_ERROR]: 'H2_ERR_COMPRESSION',
};

function catalogueCode(e: H2Error): ErrorCode {
  if (e.origin === 'connection' || e.code === undefined) return 'H2_ERR_SESSION_CLOSED';
  // REFUSED_STREAM from either end means nothing of the stream was processed: safe to retry on another connection.
  if (e.code === H2ErrorCode.REFUSED_STREAM) return 'H2_ERR_REFUSED_STREAM';
  if (e.origin === 'remote') return 'H2_ERR_PEER_RESET';
  return CATALOGUE[e.code] ?? 'H2_ERR_PROTOCOL';
}

/** `e` as ztunnel reports it: an `H2Error` becomes its catalogue MeshError (the original as `cause`), anything else is `e`. */
export function meshErrorFromH2(e: H2Error): MeshError;
export function meshErrorFromH2(e: unknown): unknown;
export function meshErrorFromH2(e: unknown): unknown {
  return e instanceof H2Error ? new MeshError(catalogueCode(e), e.message, { cause: e }) : e;
}
