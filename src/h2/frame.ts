/**
 * HTTP/2's wire vocabulary (RFC 9113 §4, §6, §7, §11): frame types, flags, error codes, setting identifiers and
 * the limits the framing layer enforces. Numbers here are the protocol's, not ours.
 */

/** Every frame starts with this many bytes: length (24 bits), type, flags, reserved bit + stream id (31 bits). */
export const FRAME_HEADER_LENGTH = 9;

/** The client connection preface (RFC 9113 §3.4), sent before the client's SETTINGS. */
export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const FrameFlag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

/** RFC 9113 §7: the codes carried by RST_STREAM and GOAWAY. */
export const H2ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

/** The name of a wire error code, for logs and messages (unknown codes are legal and shown in hex). */
export function h2ErrorName(code: number): string {
  for (const [name, value] of Object.entries(H2ErrorCode)) if (value === code) return name;
  return `0x${code.toString(16)}`;
}

export const SettingId = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

/** RFC 9113 §6.5.2: the smallest and largest SETTINGS_MAX_FRAME_SIZE; the smallest is also every peer's default. */
export const MIN_MAX_FRAME_SIZE = 16_384;
export const MAX_MAX_FRAME_SIZE = 16_777_215;
/** RFC 9113 §6.9.1: flow-control windows never exceed 2^31-1. */
export const MAX_WINDOW_SIZE = 2 ** 31 - 1;
/** RFC 9113 §6.9.2: every window starts here until SETTINGS (streams) or WINDOW_UPDATE (the connection) move it. */
export const DEFAULT_WINDOW_SIZE = 65_535;
/** RFC 9113 §6.5.2: HEADER_TABLE_SIZE's default (RFC 7541 §4.2). */
export const DEFAULT_HEADER_TABLE_SIZE = 4096;
