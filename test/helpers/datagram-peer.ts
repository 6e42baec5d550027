import { once } from 'node:events';
import type { SeqpacketSocket } from '../../src/native/seqpacket-socket.js';

/** One datagram and the fds that came with it (the receiver's to close). */
export interface Datagram {
  readonly data: Buffer;
  readonly fds: number[];
}

/** One end of a SEQPACKET connection read datagram by datagram, as a hand-driven ZDS peer reads it. */
export class DatagramPeer {
  private readonly got: Datagram[] = [];
  private waiting: ((d: Datagram) => void) | undefined;
  /** Resolves when the connection ends. */
  readonly closed: Promise<unknown>;

  constructor(readonly socket: SeqpacketSocket) {
    this.closed = once(socket, 'close');
    socket.on('message', (data, fds) => {
      const w = this.waiting;
      this.waiting = undefined;
      if (w === undefined) this.got.push({ data, fds });
      else w({ data, fds });
    });
  }

  /** The next datagram, already received or to come. */
  next(): Promise<Datagram> {
    const d = this.got.shift();
    return d !== undefined ? Promise.resolve(d) : new Promise((resolve) => (this.waiting = resolve));
  }
}
