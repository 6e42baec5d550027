import { MeshError, type ErrorCode } from '../lib/errors.js';
import { H2ErrorCode, h2ErrorName } from './frame.js';

/** The catalogue code for each wire code we raise ourselves; other wire codes only ever come from a peer. */
const CATALOGUE: Readonly<Partial<Record<number, ErrorCode>>> = {
  [H2ErrorCode.PROTOCOL_ERROR]: 'H2_ERR_PROTOCOL',
  [H2ErrorCode.FLOW_CONTROL_ERROR]: 'H2_ERR_FLOW_CONTROL',
  [H2ErrorCode.SETTINGS_TIMEOUT]: 'H2_ERR_SETTINGS_TIMEOUT',
  [H2ErrorCode.FRAME_SIZE_ERROR]: 'H2_ERR_FRAME_SIZE',
  [H2ErrorCode.STREAM_CLOSED]: 'H2_ERR_STREAM_CLOSED',
  [H2ErrorCode.REFUSED_STREAM]: 'H2_ERR_REFUSED_STREAM',
  [H2ErrorCode.COMPRESSION_ERROR]: 'H2_ERR_COMPRESSION',
};

/**
 * A violation of RFC 9113 found in what a peer sent: `streamId` 0 is a connection error (GOAWAY with `h2Code`,
 * §5.4.1), any other a stream error (RST_STREAM with `h2Code` on that stream, §5.4.2).
 */
export class H2Error extends MeshError {
  constructor(
    readonly streamId: number,
    readonly h2Code: number,
    message: string,
  ) {
    super(
      CATALOGUE[h2Code] ?? 'H2_ERR_PROTOCOL',
      `${h2ErrorName(h2Code)}${streamId === 0 ? '' : ` on stream ${streamId}`}: ${message}`,
    );
  }
}

export function connectionError(h2Code: number, message: string): H2Error {
  return new H2Error(0, h2Code, message);
}

export function streamError(streamId: number, h2Code: number, message: string): H2Error {
  return new H2Error(streamId, h2Code, message);
}
