/** DNS over TCP: each message behind its length as two bytes, big-endian (RFC 1035 4.2.2, RFC 7766 8). */
export function frame(message: Buffer): Buffer {
  const out = Buffer.allocUnsafe(2 + message.length);
  out.writeUInt16BE(message.length, 0);
  message.copy(out, 2);
  return out;
}

/**
 * Cuts a TCP stream into DNS messages. A frame longer than `maxFrame` is refused before its bytes are buffered:
 * `push` returns `undefined` and the stream is beyond repair (the caller closes it).
 */
export class FrameDecoder {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly maxFrame: number) {}

  push(chunk: Buffer): Buffer[] | undefined {
    let buf = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const out: Buffer[] = [];
    while (buf.length >= 2) {
      const len = buf.readUInt16BE(0);
      if (len > this.maxFrame) return undefined;
      if (buf.length < 2 + len) break;
      out.push(buf.subarray(2, 2 + len));
      buf = buf.subarray(2 + len);
    }
    this.pending = buf;
    return out;
  }
}
