import type net from 'node:net';
import { once } from 'node:events';

/** A frame as a raw peer sees it on the wire. */
export interface WireFrame {
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  readonly payload: Buffer;
}

/**
 * One end of an HTTP/2 connection driven by hand: it writes whatever bytes a test gives it (well-formed or not)
 * and splits what the other end sends into frames with its own minimal parser, so conformance tests do not
 * judge our frame reader with itself.
 */
export class RawPeer {
  readonly frames: WireFrame[] = [];
  private buffered = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  private ended = false;

  /** `prefaceLength`: as a server, the client preface's bytes come first and are not frames. */
  constructor(
    readonly socket: net.Socket,
    private prefaceLength = 0,
  ) {
    socket.on('data', (d: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, d]);
      const skip = Math.min(this.prefaceLength, this.buffered.length);
      this.buffered = this.buffered.subarray(skip);
      this.prefaceLength -= skip;
      while (this.buffered.length >= 9) {
        const length = this.buffered.readUIntBE(0, 3);
        if (this.buffered.length < 9 + length) break;
        this.frames.push({
          type: this.buffered[3]!,
          flags: this.buffered[4]!,
          streamId: this.buffered.readUInt32BE(5) & 0x7fff_ffff,
          payload: this.buffered.subarray(9, 9 + length),
        });
        this.buffered = this.buffered.subarray(9 + length);
      }
      this.wake();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.ended = true;
      this.wake();
    });
  }

  send(...bytes: Buffer[]): void {
    this.socket.write(Buffer.concat(bytes));
  }

  /** The first frame (from the start of the connection) matching `match`; rejects if the connection ends without one. */
  async frame(match: (f: WireFrame) => boolean, what: string): Promise<WireFrame> {
    for (;;) {
      const f = this.frames.find(match);
      if (f !== undefined) return f;
      if (this.ended)
        throw new Error(
          `connection ended without ${what}; frames seen: ${this.frames.map((x) => `${x.type}/${x.streamId}`).join(' ')}`,
        );
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Resolves when the other end has closed the connection. */
  async closed(): Promise<void> {
    if (!this.ended) await once(this.socket, 'close');
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}
