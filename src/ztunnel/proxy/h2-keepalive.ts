import { describeError } from '../../lib/errors.js';
import { meshErrorFromH2 } from './mesh-error-from-h2.js';

/** What the keepalive needs of an HBONE connection (an `H2Session`). */
export interface PingableConnection {
  /** Resolves on the peer's PING ACK; rejects if the connection closes first. */
  ping(): Promise<void>;
  once(event: 'close', listener: () => void): unknown;
}

/**
 * HTTP/2 PING every `intervalMs`, the first one interval after the start; no ACK within `timeoutMs` (or a PING that
 * fails) calls `onDead`, as ztunnel's keepalive tears the connection down (ztunnel `src/proxy/h2.rs`). ztunnel's
 * values, 10s and 20s, are the config's `hboneKeepaliveIntervalMs` and `hboneKeepaliveTimeoutMs`.
 */
export function startKeepalive(
  conn: PingableConnection,
  onDead: (why: string) => void,
  intervalMs: number,
  timeoutMs: number,
): void {
  let waiting: NodeJS.Timeout | undefined;
  let closed = false;
  const acknowledged = (): void => {
    clearTimeout(waiting);
    waiting = undefined;
  };
  const failed = (e: unknown): void => {
    acknowledged();
    if (!closed) onDead(`PING failed: ${describeError(meshErrorFromH2(e))}`);
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
