import { connectionError, streamError, type H2Error } from './h2-error.js';
import { FRAME_HEADER_LENGTH, FrameFlag, FrameType, H2ErrorCode } from './frame.js';

/** What the reader hands out, frame by frame, in wire order. A sink may throw an `H2Error` with stream id 0 to end the connection. */
export interface FrameSink {
  /**
   * A DATA frame begins: `frameLength` (padding included) counts against flow control, `dataLength` bytes follow in
   * `onData` calls. Return false to have the reader drop its data (the stream is gone); `onDataEnd` still follows.
   */
  onDataStart(streamId: number, frameLength: number, dataLength: number): boolean;
  /** Part of a DATA frame's data: a view into the chunk given to `push`, never a copy. */
  onData(streamId: number, data: Buffer): void;
  onDataEnd(streamId: number, endStream: boolean): void;
  /** A whole header block: a HEADERS frame's fragment and its CONTINUATIONs, padding and priority fields removed. */
  onHeaders(streamId: number, block: Buffer, endStream: boolean): void;
  onRstStream(streamId: number, code: number): void;
  /** SETTINGS (not an ACK): `payload` is a whole number of 6-byte settings. */
  onSettings(payload: Buffer): void;
  onSettingsAck(): void;
  /** `opaque` is the 8-byte payload, a view into the input. */
  onPing(opaque: Buffer, ack: boolean): void;
  onGoaway(lastStreamId: number, code: number, debug: Buffer): void;
  /** `increment` is non-zero (a zero increment is a protocol error the reader raises itself). */
  onWindowUpdate(streamId: number, increment: number): void;
  /** A stream error the reader found (RFC 9113 §5.4.2); the connection goes on. */
  onStreamError(error: H2Error): void;
}

const enum State {
  Header,
  DataPadLength,
  DataBody,
  Skip,
  Payload,
}

/** Priority fields in HEADERS (with the PRIORITY flag) and PRIORITY frames: exclusive bit + dependency, weight. */
const PRIORITY_FIELDS_LENGTH = 5;

/**
 * Turns the bytes of an HTTP/2 connection, in chunks of any size, into validated frames (RFC 9113 §4, §6).
 * DATA is streamed out as views of the input chunks however its frame is split, so no payload byte is copied;
 * other frames are handed out whole (a view when one chunk holds them, else assembled, which only a split
 * control frame needs). Every per-frame rule of §6 is checked here: stream id 0 or not, fixed lengths, padding,
 * the size limit we advertised, CONTINUATION sequencing (§6.10) and the cap on an accumulated header block.
 * Input chunks must not be reused by their producer (a socket's 'data' chunks never are).
 */
export class FrameReader {
  private state = State.Header;
  private readonly head = Buffer.alloc(FRAME_HEADER_LENGTH);
  private headFill = 0;
  private length = 0;
  private type = 0;
  private flags = 0;
  private streamId = 0;
  /** Bytes left of the current DATA body or of what is being skipped. */
  private remaining = 0;
  private padding = 0;
  private deliverData = false;
  private assembly: Buffer | undefined;
  private assemblyFill = 0;
  /** The header block being accumulated; `blockStreamId` 0 when no CONTINUATION is expected. */
  private blockFragments: Buffer[] = [];
  private blockSize = 0;
  private blockStreamId = 0;
  private blockEndStream = false;
  /** The HEADERS that began the block made its stream depend on itself: a stream error once the block is decoded. */
  private blockSelfDependent = false;
  private settingsSeen = false;

  constructor(
    private readonly sink: FrameSink,
    /** SETTINGS_MAX_FRAME_SIZE we advertise: a longer frame is a FRAME_SIZE_ERROR. */
    private readonly maxFrameSize: number,
    /** The most bytes one header block may take across HEADERS and CONTINUATION frames. */
    private readonly maxHeaderBlockSize: number,
  ) {}

  /** Consumes one chunk. Throws the connection error (an `H2Error` on stream 0) that ends the connection. */
  push(chunk: Buffer): void {
    const end = chunk.length;
    let off = 0;
    while (off < end) {
      switch (this.state) {
        case State.Header: {
          if (this.headFill === 0 && end - off >= FRAME_HEADER_LENGTH) {
            this.beginFrame(chunk, off);
            off += FRAME_HEADER_LENGTH;
          } else {
            const take = Math.min(FRAME_HEADER_LENGTH - this.headFill, end - off);
            chunk.copy(this.head, this.headFill, off, off + take);
            this.headFill += take;
            off += take;
            if (this.headFill < FRAME_HEADER_LENGTH) break;
            this.headFill = 0;
            this.beginFrame(this.head, 0);
          }
          break;
        }
        case State.DataPadLength:
          this.beginData(chunk[off++]!);
          break;
        case State.DataBody: {
          const take = Math.min(this.remaining, end - off);
          if (this.deliverData) this.sink.onData(this.streamId, chunk.subarray(off, off + take));
          off += take;
          this.remaining -= take;
          if (this.remaining === 0) this.afterDataBody();
          break;
        }
        case State.Skip: {
          const take = Math.min(this.remaining, end - off);
          off += take;
          this.remaining -= take;
          if (this.remaining === 0) this.endSkip();
          break;
        }
        case State.Payload: {
          if (this.assemblyFill === 0 && end - off >= this.length) {
            const payload = chunk.subarray(off, off + this.length);
            off += this.length;
            this.state = State.Header;
            this.onPayload(payload);
            break;
          }
          this.assembly ??= Buffer.allocUnsafe(this.length);
          const take = Math.min(this.length - this.assemblyFill, end - off);
          chunk.copy(this.assembly, this.assemblyFill, off, off + take);
          this.assemblyFill += take;
          off += take;
          if (this.assemblyFill === this.length) {
            const payload = this.assembly;
            this.assembly = undefined;
            this.assemblyFill = 0;
            this.state = State.Header;
            this.onPayload(payload);
          }
          break;
        }
      }
    }
  }

  private beginFrame(b: Buffer, at: number): void {
    const length = (b[at]! << 16) | (b[at + 1]! << 8) | b[at + 2]!;
    const type = b[at + 3]!;
    const flags = b[at + 4]!;
    // §4.1: the reserved bit is ignored on receipt.
    const streamId = b.readUInt32BE(at + 5) & 0x7fff_ffff;
    this.length = length;
    this.type = type;
    this.flags = flags;
    this.streamId = streamId;
    if (!this.settingsSeen) {
      // §3.4: each side's preface ends with a SETTINGS frame, so the first frame of a connection is one.
      if (type !== FrameType.SETTINGS || flags & FrameFlag.ACK)
        throw connectionError(
          H2ErrorCode.PROTOCOL_ERROR,
          `the connection preface's first frame is type ${type}, not SETTINGS (RFC 9113 §3.4)`,
        );
      this.settingsSeen = true;
    }
    if (length > this.maxFrameSize)
      throw connectionError(
        H2ErrorCode.FRAME_SIZE_ERROR,
        `a ${length}-byte frame (type ${type}) exceeds our SETTINGS_MAX_FRAME_SIZE ${this.maxFrameSize}`,
      );
    if (this.blockStreamId !== 0 && (type !== FrameType.CONTINUATION || streamId !== this.blockStreamId)) {
      throw connectionError(
        H2ErrorCode.PROTOCOL_ERROR,
        `frame type ${type} on stream ${streamId} where a CONTINUATION of stream ${this.blockStreamId}'s header block must come (RFC 9113 §6.10)`,
      );
    }
    switch (type) {
      case FrameType.DATA:
        this.needStream('DATA');
        if (flags & FrameFlag.PADDED) {
          if (length === 0)
            throw connectionError(H2ErrorCode.FRAME_SIZE_ERROR, 'a padded DATA frame too short for its Pad Length');
          this.state = State.DataPadLength;
        } else this.beginData(0);
        return;
      case FrameType.HEADERS:
      case FrameType.CONTINUATION:
        this.needStream(type === FrameType.HEADERS ? 'HEADERS' : 'CONTINUATION');
        if (type === FrameType.CONTINUATION && this.blockStreamId === 0)
          throw connectionError(
            H2ErrorCode.PROTOCOL_ERROR,
            `CONTINUATION on stream ${streamId} follows no HEADERS (RFC 9113 §6.10)`,
          );
        break;
      case FrameType.PRIORITY:
        this.needStream('PRIORITY');
        if (length !== PRIORITY_FIELDS_LENGTH) {
          this.sink.onStreamError(
            streamError(streamId, H2ErrorCode.FRAME_SIZE_ERROR, `PRIORITY of ${length} bytes, not 5`),
          );
          this.skip(length);
          return;
        }
        break;
      case FrameType.RST_STREAM:
        this.needStream('RST_STREAM');
        this.needLength('RST_STREAM', 4);
        break;
      case FrameType.SETTINGS:
        this.needConnection('SETTINGS');
        if (flags & FrameFlag.ACK) this.needLength('SETTINGS with ACK', 0);
        else if (length % 6 !== 0)
          throw connectionError(H2ErrorCode.FRAME_SIZE_ERROR, `SETTINGS of ${length} bytes, not a multiple of 6`);
        break;
      case FrameType.PUSH_PROMISE:
        // We never enable push (a client says ENABLE_PUSH 0; a server cannot receive push at all).
        throw connectionError(H2ErrorCode.PROTOCOL_ERROR, 'PUSH_PROMISE, but push is disabled (RFC 9113 §8.4)');
      case FrameType.PING:
        this.needConnection('PING');
        this.needLength('PING', 8);
        break;
      case FrameType.GOAWAY:
        this.needConnection('GOAWAY');
        if (length < 8)
          throw connectionError(
            H2ErrorCode.FRAME_SIZE_ERROR,
            `GOAWAY of ${length} bytes, shorter than its 8 fixed bytes`,
          );
        break;
      case FrameType.WINDOW_UPDATE:
        this.needLength('WINDOW_UPDATE', 4);
        break;
      default:
        // §5.5: frames of unknown types are ignored.
        this.skip(length);
        return;
    }
    this.state = State.Payload;
    if (length === 0) {
      this.state = State.Header;
      this.onPayload(this.head.subarray(0, 0));
    }
  }

  private needStream(name: string): void {
    if (this.streamId === 0) throw connectionError(H2ErrorCode.PROTOCOL_ERROR, `${name} on stream 0`);
  }

  private needConnection(name: string): void {
    if (this.streamId !== 0)
      throw connectionError(H2ErrorCode.PROTOCOL_ERROR, `${name} on stream ${this.streamId}, not 0`);
  }

  private needLength(name: string, expected: number): void {
    if (this.length !== expected)
      throw connectionError(H2ErrorCode.FRAME_SIZE_ERROR, `${name} of ${this.length} bytes, not ${expected}`);
  }

  private skip(n: number): void {
    this.remaining = n;
    this.state = State.Skip;
    if (n === 0) this.endSkip();
  }

  private beginData(padLength: number): void {
    const padded = (this.flags & FrameFlag.PADDED) !== 0;
    const dataLength = this.length - (padded ? 1 + padLength : 0);
    if (dataLength < 0)
      throw connectionError(
        H2ErrorCode.PROTOCOL_ERROR,
        `DATA padding of ${padLength} bytes does not fit its ${this.length}-byte frame`,
      );
    this.padding = padded ? padLength : 0;
    this.deliverData = this.sink.onDataStart(this.streamId, this.length, dataLength);
    this.remaining = dataLength;
    this.state = State.DataBody;
    if (dataLength === 0) this.afterDataBody();
  }

  private afterDataBody(): void {
    this.skip(this.padding);
  }

  private endSkip(): void {
    this.state = State.Header;
    if (this.type === FrameType.DATA) this.sink.onDataEnd(this.streamId, (this.flags & FrameFlag.END_STREAM) !== 0);
  }

  private onPayload(p: Buffer): void {
    const id = this.streamId;
    switch (this.type) {
      case FrameType.HEADERS:
        this.onHeadersPayload(p);
        return;
      case FrameType.CONTINUATION:
        this.addFragment(p);
        if (this.flags & FrameFlag.END_HEADERS) this.endBlock();
        return;
      case FrameType.PRIORITY:
        if ((p.readUInt32BE(0) & 0x7fff_ffff) === id)
          this.sink.onStreamError(
            streamError(id, H2ErrorCode.PROTOCOL_ERROR, 'the stream depends on itself (RFC 9113 §5.3.1)'),
          );
        return;
      case FrameType.RST_STREAM:
        this.sink.onRstStream(id, p.readUInt32BE(0));
        return;
      case FrameType.SETTINGS:
        if (this.flags & FrameFlag.ACK) this.sink.onSettingsAck();
        else this.sink.onSettings(p);
        return;
      case FrameType.PING:
        this.sink.onPing(p, (this.flags & FrameFlag.ACK) !== 0);
        return;
      case FrameType.GOAWAY:
        this.sink.onGoaway(p.readUInt32BE(0) & 0x7fff_ffff, p.readUInt32BE(4), p.subarray(8));
        return;
      case FrameType.WINDOW_UPDATE: {
        const increment = p.readUInt32BE(0) & 0x7fff_ffff;
        if (increment !== 0) this.sink.onWindowUpdate(id, increment);
        else if (id === 0)
          throw connectionError(H2ErrorCode.PROTOCOL_ERROR, 'WINDOW_UPDATE with a zero increment on the connection');
        else
          this.sink.onStreamError(streamError(id, H2ErrorCode.PROTOCOL_ERROR, 'WINDOW_UPDATE with a zero increment'));
        return;
      }
    }
  }

  private onHeadersPayload(p: Buffer): void {
    let start = 0;
    let padLength = 0;
    if (this.flags & FrameFlag.PADDED) {
      if (p.length < 1)
        throw connectionError(H2ErrorCode.FRAME_SIZE_ERROR, 'a padded HEADERS frame too short for its Pad Length');
      padLength = p[0]!;
      start = 1;
    }
    this.blockSelfDependent = false;
    if (this.flags & FrameFlag.PRIORITY) {
      if (p.length < start + PRIORITY_FIELDS_LENGTH)
        throw connectionError(
          H2ErrorCode.FRAME_SIZE_ERROR,
          'a HEADERS frame with PRIORITY too short for its priority fields',
        );
      this.blockSelfDependent = (p.readUInt32BE(start) & 0x7fff_ffff) === this.streamId;
      start += PRIORITY_FIELDS_LENGTH;
    }
    if (padLength > p.length - start)
      throw connectionError(
        H2ErrorCode.PROTOCOL_ERROR,
        `HEADERS padding of ${padLength} bytes does not fit its ${p.length}-byte frame`,
      );
    this.blockStreamId = this.streamId;
    this.blockEndStream = (this.flags & FrameFlag.END_STREAM) !== 0;
    this.addFragment(p.subarray(start, p.length - padLength));
    if (this.flags & FrameFlag.END_HEADERS) this.endBlock();
  }

  private addFragment(f: Buffer): void {
    this.blockSize += f.length;
    if (this.blockSize > this.maxHeaderBlockSize) {
      throw connectionError(
        H2ErrorCode.ENHANCE_YOUR_CALM,
        `stream ${this.blockStreamId}'s header block exceeds ${this.maxHeaderBlockSize} bytes`,
      );
    }
    this.blockFragments.push(f);
  }

  private endBlock(): void {
    const fragments = this.blockFragments;
    const block = fragments.length === 1 ? fragments[0]! : Buffer.concat(fragments, this.blockSize);
    const id = this.blockStreamId;
    this.blockFragments = [];
    this.blockSize = 0;
    this.blockStreamId = 0;
    // The block is decoded even when its stream fails, so the peer's HPACK dynamic table stays in step with ours.
    this.sink.onHeaders(id, block, this.blockEndStream);
    if (this.blockSelfDependent)
      this.sink.onStreamError(
        streamError(id, H2ErrorCode.PROTOCOL_ERROR, 'the stream depends on itself (RFC 9113 §5.3.1)'),
      );
  }
}
