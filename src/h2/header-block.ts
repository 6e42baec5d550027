/**
 * The contract between HBONE's HTTP/2 framing (src/h2/) and its HPACK codec (src/h2/hpack/,
 * RFC 7541). A connection has one decoder and one encoder; each keeps its dynamic table across the
 * connection's header blocks, so blocks go through them in the order they are on the wire.
 */

/** One header field: a lowercase name and its value, in wire order (pseudo-header fields first). */
export type HeaderField = readonly [name: string, value: string];

/** What bounds a decoder: the values this end advertises in its SETTINGS. */
export interface HeaderBlockDecoderLimits {
  /** SETTINGS_HEADER_TABLE_SIZE: the most a dynamic table size update may ask for (RFC 7541 §4.2). */
  readonly maxTableSize: number;
  /** SETTINGS_MAX_HEADER_LIST_SIZE: the most a decoded block may hold, counted as RFC 9113 §6.5.2 counts it. */
  readonly maxHeaderListSize: number;
}

export interface HeaderBlockDecoder {
  /**
   * Decodes one complete header block (a HEADERS frame's fragment and its CONTINUATIONs, concatenated). Throws
   * the connection error COMPRESSION_ERROR (an `H2Error`) on anything RFC 7541 calls a decoding error, and on a
   * block whose fields exceed `maxHeaderListSize`; the connection must then end with GOAWAY COMPRESSION_ERROR,
   * since the table can no longer be trusted.
   */
  decode(block: Uint8Array): HeaderField[];
}

export interface HeaderBlockEncoder {
  /** Encodes one header block. */
  encode(fields: readonly HeaderField[]): Buffer;
  /** The peer's SETTINGS_HEADER_TABLE_SIZE: the encoder's dynamic table must fit within it from the next block on. */
  setPeerMaxTableSize(size: number): void;
}
