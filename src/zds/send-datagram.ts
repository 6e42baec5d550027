import { once } from 'node:events';
import { describeError, MeshError } from '../lib/errors.js';
import type { SeqpacketSocket } from '../native/seqpacket-socket.js';

/**
 * Sends one ZDS datagram (with `fds` as SCM_RIGHTS; they stay the caller's), waiting for 'drain' when the socket's
 * buffer is full. Rejects with `lost` (the system error as its cause) when the connection is gone or closes first.
 */
export async function sendDatagram(
  socket: SeqpacketSocket,
  data: Buffer,
  fds: readonly number[],
  lost: 'ZDS_ERR_NO_ZTUNNEL' | 'ZDS_ERR_NO_NODE_AGENT',
): Promise<void> {
  const gone = (cause?: unknown): MeshError =>
    new MeshError(
      lost,
      `the ZDS connection is gone; a datagram could not be sent${cause === undefined ? '' : `: ${describeError(cause)}`}`,
      { cause },
    );
  for (;;) {
    let sent: boolean;
    try {
      sent = socket.send(data, fds);
    } catch (e) {
      throw gone(e);
    }
    if (sent) return;
    const ac = new AbortController();
    try {
      const drained = once(socket, 'drain', { signal: ac.signal }).then(() => true);
      const closed = once(socket, 'close', { signal: ac.signal }).then(() => false);
      if (!(await Promise.race([drained, closed]))) throw gone();
    } finally {
      ac.abort();
    }
  }
}
