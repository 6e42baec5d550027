import { describeError } from '../../lib/errors.js';

/** HTTP/2 PING every 10s after a 10s delay; no PONG within 20s tears the connection down (ztunnel `src/proxy/h2/client.rs`). */
export const PING_INTERVAL_MS = 10_000;
export const PING_TIMEOUT_MS = 20_000;

/** What the keepalive needs of an HBONE connection (an `H2Session`). */
export interface PingableConnection {
  /** Resolves on the peer's PING ACK; rejects if the connection closes first. */
  ping(): Promise<void>;
  once(event: 'close', listener: () => void): unknown;
}

export function startKeepalive(
  conn: PingableConnection,
  onDead: (why: string) => void,
  intervalMs = PING_INTERVAL_MS,
  timeoutMs = PING_TIMEOUT_MS,
): void {
  let waiting: NodeJS.Timeout | undefined;
  let closed = false;
  const acknowledged = (): void => {
    clearTimeout(waiting);
    waiting = undefined;
  };
  const failed = (e: unknown): void => {
    acknowledged();
    if (!closed) onDead(`PING failed: ${describeError(e)}`);
  };
  const interval = setInterval(() => {
    if (closed || waiting !== undefined) return;
    waiting = setTimeout(() => onDead(`no PING acknowledgement within ${timeoutMs / 1000}s`), timeoutMs);
    waiting.unref();
    conn.ping().then(acknowledged, failed);
  }, intervalMs);
  interval.unref();
  conn.once('close', () => {
    closed = true;
    clearInterval(interval);
    clearTimeout(waiting);
  });
}
