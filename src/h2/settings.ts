import { connectionError } from './h2-error.js';
import {
  DEFAULT_HEADER_TABLE_SIZE,
  DEFAULT_WINDOW_SIZE,
  H2ErrorCode,
  MAX_MAX_FRAME_SIZE,
  MAX_WINDOW_SIZE,
  MIN_MAX_FRAME_SIZE,
  SettingId,
} from './frame.js';

/** A peer's settings (RFC 9113 §6.5.2) as this end applies them. */
export interface PeerSettings {
  readonly headerTableSize: number;
  readonly enablePush: boolean;
  /** Infinity until the peer sets a limit. */
  readonly maxConcurrentStreams: number;
  readonly initialWindowSize: number;
  readonly maxFrameSize: number;
  /** Infinity until the peer sets a limit (advisory, RFC 9113 §10.5.1). */
  readonly maxHeaderListSize: number;
}

/** The values every peer starts with, before its first SETTINGS. */
export const INITIAL_PEER_SETTINGS: PeerSettings = Object.freeze({
  headerTableSize: DEFAULT_HEADER_TABLE_SIZE,
  enablePush: true,
  maxConcurrentStreams: Infinity,
  initialWindowSize: DEFAULT_WINDOW_SIZE,
  maxFrameSize: MIN_MAX_FRAME_SIZE,
  maxHeaderListSize: Infinity,
});

/**
 * Applies a SETTINGS payload (a whole number of 6-byte entries, in order) to `current`. Throws the connection
 * error RFC 9113 §6.5.2 names for a bad value; unknown identifiers are ignored (§6.5.2).
 */
export function applySettings(current: PeerSettings, payload: Buffer, fromServer: boolean): PeerSettings {
  const next = { ...current };
  for (let off = 0; off < payload.length; off += 6) {
    const id = payload.readUInt16BE(off);
    const value = payload.readUInt32BE(off + 2);
    switch (id) {
      case SettingId.HEADER_TABLE_SIZE:
        next.headerTableSize = value;
        break;
      case SettingId.ENABLE_PUSH:
        if (value > 1) throw connectionError(H2ErrorCode.PROTOCOL_ERROR, `SETTINGS_ENABLE_PUSH ${value}, not 0 or 1`);
        if (fromServer && value === 1)
          throw connectionError(H2ErrorCode.PROTOCOL_ERROR, 'a server sent SETTINGS_ENABLE_PUSH 1');
        next.enablePush = value === 1;
        break;
      case SettingId.MAX_CONCURRENT_STREAMS:
        next.maxConcurrentStreams = value;
        break;
      case SettingId.INITIAL_WINDOW_SIZE:
        if (value > MAX_WINDOW_SIZE)
          throw connectionError(H2ErrorCode.FLOW_CONTROL_ERROR, `SETTINGS_INITIAL_WINDOW_SIZE ${value} exceeds 2^31-1`);
        next.initialWindowSize = value;
        break;
      case SettingId.MAX_FRAME_SIZE:
        if (value < MIN_MAX_FRAME_SIZE || value > MAX_MAX_FRAME_SIZE)
          throw connectionError(
            H2ErrorCode.PROTOCOL_ERROR,
            `SETTINGS_MAX_FRAME_SIZE ${value}, outside ${MIN_MAX_FRAME_SIZE}..${MAX_MAX_FRAME_SIZE}`,
          );
        next.maxFrameSize = value;
        break;
      case SettingId.MAX_HEADER_LIST_SIZE:
        next.maxHeaderListSize = value;
        break;
    }
  }
  return next;
}
