/**
 * The server name a TLS client asks for, read from its ClientHello without terminating TLS, as Envoy's
 * `tls_inspector` does for a passthrough listener (RFC 8446 §4.1.2, RFC 6066 §3). Written by hand: Node's `tls`
 * offers the SNI only to a server that terminates the connection, and the well-kept parsers on npm do the whole
 * handshake. Only what SNI needs is read: the first handshake record, the ClientHello's fixed fields skipped by
 * their lengths, and the `server_name` extension's first `host_name`.
 */

/** The record header, the handshake header, and the ClientHello's version and random. */
const RECORD_HEADER = 5;
const HANDSHAKE_HEADER = 4;
const CONTENT_HANDSHAKE = 22;
const CLIENT_HELLO = 1;
const EXT_SERVER_NAME = 0;
const NAME_HOST = 0;
/** A ClientHello larger than one record (16 KiB) is not waited for: it is read as one without a name. */
export const CLIENT_HELLO_MAX = RECORD_HEADER + 16_384;

export type ClientHelloPeek =
  { readonly t: 'more' } | { readonly t: 'not-tls' } | { readonly t: 'hello'; readonly sni: string | undefined };

/** What the bytes received so far say: more are needed, they are not TLS, or the ClientHello's server name. */
export function peekClientHello(b: Buffer): ClientHelloPeek {
  if (b.length >= 1 && b[0] !== CONTENT_HANDSHAKE) return { t: 'not-tls' };
  if (b.length < RECORD_HEADER) return { t: 'more' };
  const recordLength = b.readUInt16BE(3);
  if (b.length < RECORD_HEADER + recordLength) return b.length >= CLIENT_HELLO_MAX ? { t: 'not-tls' } : { t: 'more' };
  const record = b.subarray(RECORD_HEADER, RECORD_HEADER + recordLength);
  if (record.length < HANDSHAKE_HEADER || record[0] !== CLIENT_HELLO) return { t: 'not-tls' };
  let p = HANDSHAKE_HEADER + 2 + 32; // legacy_version, random
  const skip = (lengthBytes: 1 | 2): boolean => {
    if (p + lengthBytes > record.length) return false;
    const n = lengthBytes === 1 ? record[p]! : record.readUInt16BE(p);
    p += lengthBytes + n;
    return p <= record.length;
  };
  // legacy_session_id, cipher_suites, legacy_compression_methods; a hello cut short in the record has no name.
  if (!skip(1) || !skip(2) || !skip(1)) return { t: 'hello', sni: undefined };
  if (p + 2 > record.length) return { t: 'hello', sni: undefined };
  const end = Math.min(record.length, p + 2 + record.readUInt16BE(p));
  p += 2;
  while (p + 4 <= end) {
    const type = record.readUInt16BE(p);
    const length = record.readUInt16BE(p + 2);
    const body = record.subarray(p + 4, Math.min(end, p + 4 + length));
    p += 4 + length;
    if (type !== EXT_SERVER_NAME) continue;
    // server_name_list: a 2-byte length, then entries of type (1), length (2), name.
    let q = 2;
    while (q + 3 <= body.length) {
      const nameType = body[q]!;
      const nameLength = body.readUInt16BE(q + 1);
      const name = body.subarray(q + 3, q + 3 + nameLength);
      q += 3 + nameLength;
      if (nameType === NAME_HOST && name.length === nameLength) return { t: 'hello', sni: name.toString('ascii') };
    }
    return { t: 'hello', sni: undefined };
  }
  return { t: 'hello', sni: undefined };
}
