import type { Http2Session } from 'node:http2';

/** HTTP/2 PING every 10s after a 10s delay; no PONG within 20s tears the connection down (ztunnel `src/proxy/h2/client.rs`). */
export const PING_INTERVAL_MS = 10_000;
export const PING_TIMEOUT_MS = 20_000;

export function startKeepalive(
  session: Pick<Http2Session, 'ping' | 'destroyed' | 'once'>,
  onDead: (why: string) => void,
  intervalMs = PING_INTERVAL_MS,
  timeoutMs = PING_TIMEOUT_MS,
): void {
  let waiting: NodeJS.Timeout | undefined;
  const interval = setInterval(() => {
    if (session.destroyed || waiting !== undefined) return;
    waiting = setTimeout(() => onDead(`no PING acknowledgement within ${timeoutMs / 1000}s`), timeoutMs);
    waiting.unref();
    const sent = session.ping((err) => {
      clearTimeout(waiting);
      waiting = undefined;
      if (err !== null && !session.destroyed) onDead(`PING failed: ${err.message}`);
    });
    if (!sent) {
      clearTimeout(waiting);
      waiting = undefined;
    }
  }, intervalMs);
  interval.unref();
  session.once('close', () => {
    clearInterval(interval);
    clearTimeout(waiting);
  });
}
