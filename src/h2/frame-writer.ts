import { FRAME_HEADER_LENGTH, FrameFlag, FrameType } from './frame.js';

/** Slab size: 16 KiB holds ~1800 DATA frame headers, so a new slab is allocated about once per 1800 frames. */
const SLAB_SIZE = 16 * 1024;

/**
 * Frame bytes for the socket (RFC 9113 §4.1, §6). Headers of DATA frames and WINDOW_UPDATEs, the frames of the
 * hot path, are carved out of a slab: a socket keeps a written Buffer until its write completes (queued while
 * corked or while earlier writes are pending), so a header cannot be rewritten in place, but it can live in a
 * slab region no later frame reuses. The view object is the one allocation per frame, the same a socket needs
 * for any Buffer it is handed; the payload itself is never copied. Rarer frames get a Buffer of their own.
 */
export class FrameWriter {
  private slab = Buffer.allocUnsafe(SLAB_SIZE);
  private used = 0;

  /** The 9-byte header of a DATA frame whose payload is written right after it. */
  dataHeader(streamId: number, length: number, endStream: boolean): Buffer {
    const b = this.take(FRAME_HEADER_LENGTH);
    writeHeader(b, length, FrameType.DATA, endStream ? FrameFlag.END_STREAM : 0, streamId);
    return b;
  }

  windowUpdate(streamId: number, increment: number): Buffer {
    const b = this.take(FRAME_HEADER_LENGTH + 4);
    writeHeader(b, 4, FrameType.WINDOW_UPDATE, 0, streamId);
    b.writeUInt32BE(increment, FRAME_HEADER_LENGTH);
    return b;
  }

  private take(n: number): Buffer {
    if (this.used + n > SLAB_SIZE) {
      this.slab = Buffer.allocUnsafe(SLAB_SIZE);
      this.used = 0;
    }
    const b = this.slab.subarray(this.used, this.used + n);
    this.used += n;
    return b;
  }
}

function writeHeader(b: Buffer, length: number, type: number, flags: number, streamId: number): void {
  b[0] = length >>> 16;
  b[1] = (length >>> 8) & 0xff;
  b[2] = length & 0xff;
  b[3] = type;
  b[4] = flags;
  b.writeUInt32BE(streamId, 5);
}

function frame(type: number, flags: number, streamId: number, payloadLength: number): Buffer {
  const b = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + payloadLength);
  writeHeader(b, payloadLength, type, flags, streamId);
  return b;
}

export function settingsFrame(settings: readonly (readonly [id: number, value: number])[]): Buffer {
  const b = frame(FrameType.SETTINGS, 0, 0, settings.length * 6);
  settings.forEach(([id, value], i) => {
    b.writeUInt16BE(id, FRAME_HEADER_LENGTH + i * 6);
    b.writeUInt32BE(value, FRAME_HEADER_LENGTH + i * 6 + 2);
  });
  return b;
}

/** Immutable, so one Buffer serves every write. */
export const SETTINGS_ACK_FRAME: Buffer = frame(FrameType.SETTINGS, FrameFlag.ACK, 0, 0);

export function pingFrame(opaque: Uint8Array, ack: boolean): Buffer {
  return rawFrame(FrameType.PING, ack ? FrameFlag.ACK : 0, 0, opaque.subarray(0, 8));
}

export function goawayFrame(lastStreamId: number, code: number, debug: string): Buffer {
  const text = Buffer.from(debug, 'utf8');
  const b = frame(FrameType.GOAWAY, 0, 0, 8 + text.length);
  b.writeUInt32BE(lastStreamId, FRAME_HEADER_LENGTH);
  b.writeUInt32BE(code, FRAME_HEADER_LENGTH + 4);
  text.copy(b, FRAME_HEADER_LENGTH + 8);
  return b;
}

export function rstStreamFrame(streamId: number, code: number): Buffer {
  const b = frame(FrameType.RST_STREAM, 0, streamId, 4);
  b.writeUInt32BE(code, FRAME_HEADER_LENGTH);
  return b;
}

/** A header block as HEADERS plus as many CONTINUATIONs as `maxFrameSize` (the peer's) requires (§6.10). */
export function headersFrames(streamId: number, block: Uint8Array, endStream: boolean, maxFrameSize: number): Buffer[] {
  const frames: Buffer[] = [];
  let off = 0;
  do {
    const n = Math.min(maxFrameSize, block.length - off);
    const first = off === 0;
    const last = off + n === block.length;
    const flags = (last ? FrameFlag.END_HEADERS : 0) | (first && endStream ? FrameFlag.END_STREAM : 0);
    const b = frame(first ? FrameType.HEADERS : FrameType.CONTINUATION, flags, streamId, n);
    b.set(block.subarray(off, off + n), FRAME_HEADER_LENGTH);
    frames.push(b);
    off += n;
  } while (off < block.length);
  return frames;
}

/** Any frame with its payload copied after the header (also what tests use to send frames the typed writers never would). */
export function rawFrame(type: number, flags: number, streamId: number, payload: Uint8Array): Buffer {
  const b = frame(type, flags, streamId, payload.length);
  b.set(payload, FRAME_HEADER_LENGTH);
  return b;
}
