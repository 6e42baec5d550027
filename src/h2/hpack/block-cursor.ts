/** A read position in one header block, shared by the decoder and the primitives it reads with. */
import { compressionError } from './compression-error.js';

export class BlockCursor {
  /** The block as a Buffer view (no copy), for latin1 string slices. */
  readonly bytes: Buffer;
  pos = 0;

  constructor(block: Uint8Array) {
    this.bytes = Buffer.from(block.buffer, block.byteOffset, block.byteLength);
  }

  get remaining(): number {
    return this.bytes.length - this.pos;
  }

  /** The next byte; a block that ends here is truncated in the middle of `what`. */
  next(what: string): number {
    if (this.pos >= this.bytes.length) throw compressionError(`block ends inside ${what}`, this.pos);
    return this.bytes[this.pos++]!;
  }
}
