import type { Http2Session } from 'node:http2';

/** HTTP/2 PING every 10s after a 10s delay; no PONG within 20s tears the connection down (spec §4.3). */
export const PING_INTERVAL_MS = 10_000;
export const PING_TIMEOUT_MS = 20_000;

export function startKeepalive(session: Http2Session, onDead: (why: string) => void): void {
  let waiting: NodeJS.Timeout | undefined;
  const interval = setInterval(() => {
    if (session.destroyed || waiting !== undefined) return;
    waiting = setTimeout(() => onDead('no PING acknowledgement within 20s'), PING_TIMEOUT_MS);
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
  }, PING_INTERVAL_MS);
  interval.unref();
  session.once('close', () => {
    clearInterval(interval);
    clearTimeout(waiting);
  });
}
