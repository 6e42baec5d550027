import type { ZtunnelConfig } from '../config.js';
import type { H2Role, H2SessionOptions } from '../../h2/h2-session.js';
import { HpackDecoder } from '../../h2/hpack/hpack-decoder.js';
import { HpackEncoder } from '../../h2/hpack/hpack-encoder.js';

/** Server-side limits (ztunnel `src/proxy/h2/server.rs`): 200 concurrent streams, 64 KiB of header list. */
const SERVER_MAX_CONCURRENT_STREAMS = 200;
const SERVER_MAX_HEADER_LIST_SIZE = 64 * 1024;
/** The client's header list limit (ztunnel `src/proxy/h2/client.rs`); a client advertises no stream limit. */
const CLIENT_MAX_HEADER_LIST_SIZE = 16 * 1024;

/**
 * The HTTP/2 settings of an HBONE connection as ztunnel makes them, from HTTP2_* (a fresh HPACK codec each call); the
 * peer has the HBONE connect timeout to acknowledge our SETTINGS and to take a closing connection's last frames.
 */
export function hboneSessionOptions(
  c: Pick<
    ZtunnelConfig,
    'http2StreamWindowSize' | 'http2ConnectionWindowSize' | 'http2FrameSize' | 'hboneConnectTimeoutMs'
  >,
  role: H2Role,
): H2SessionOptions {
  const server = role === 'server';
  return {
    role,
    streamWindowSize: c.http2StreamWindowSize,
    connectionWindowSize: c.http2ConnectionWindowSize,
    maxFrameSize: c.http2FrameSize,
    maxHeaderListSize: server ? SERVER_MAX_HEADER_LIST_SIZE : CLIENT_MAX_HEADER_LIST_SIZE,
    ...(server ? { maxConcurrentStreams: SERVER_MAX_CONCURRENT_STREAMS } : {}),
    createDecoder: (limits) => new HpackDecoder(limits),
    encoder: new HpackEncoder(),
    settingsAckTimeoutMs: c.hboneConnectTimeoutMs,
    finishGraceMs: c.hboneConnectTimeoutMs,
  };
}
