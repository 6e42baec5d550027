import { once } from 'node:events';
import type { SeqpacketSocket } from '../lib/seqpacket-socket.js';

/**
 * Sends one ZDS datagram (with `fds` as SCM_RIGHTS; they stay the caller's), waiting for 'drain' when the socket's
 * buffer is full. Rejects with the system error when the connection is gone, or EPIPE when it closes first.
 */
export async function sendDatagram(socket: SeqpacketSocket, data: Buffer, fds: readonly number[] = []): Promise<void> {
  while (!socket.send(data, fds)) {
    const ac = new AbortController();
    try {
      const drained = once(socket, 'drain', { signal: ac.signal }).then(() => true);
      const closed = once(socket, 'close', { signal: ac.signal }).then(() => false);
      if (!(await Promise.race([drained, closed]))) {
        throw Object.assign(new Error('the ZDS connection closed before a datagram could be sent'), { code: 'EPIPE' });
      }
    } finally {
      ac.abort();
    }
  }
}
