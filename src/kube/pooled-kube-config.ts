/**
 * A KubeConfig whose API requests share keep-alive connections.
 *
 * client-node (1.x) gives every request a new https.Agent, so each GET, PATCH or POST opens its own TCP and TLS
 * connection: a handshake on both ends per call. A kubelet starting a pod makes about ten calls (status writes,
 * Events, a TokenRequest), the scheduler one per binding, and a burst of pods spent more CPU on handshakes than on the
 * requests. client-go keeps one connection per API server; this keeps a pool per TLS identity instead: requests made
 * with the same CA, client certificate, key and verification settings reuse the same agent's idle sockets, and new
 * material (a renewed client certificate) gets a new agent. A bearer token is a header, not part of the identity.
 *
 * Idle sockets are closed a second before the API server's keep-alive timeout, so a request is not sent on a socket
 * the server is closing: Node's agent reads that timeout from the server's `Keep-Alive` header, but applies it only
 * when it is shorter than the agent's own `timeout`, so the agent has one (IDLE_TIMEOUT_MS). Watches keep client-node's
 * agent of their own: a long-lived stream has no use for a pool.
 */
import type http from 'node:http';
import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';

type RequestContext = Parameters<KubeConfig['applySecurityAuthentication']>[0];

/** The options of an agent that decide which server certificates it accepts and which identity it presents. */
const IDENTITY_OPTIONS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

/**
 * The agent's socket timeout: the bound on an idle socket when the server announces none. On a socket in use it only
 * emits `timeout`, which client-node's requests do not act on.
 */
const IDLE_TIMEOUT_MS = 30_000;

/** Idle sockets kept per agent; more concurrent requests open more, closed when done. */
const MAX_FREE_SOCKETS = 8;

function sameOption(a: unknown, b: unknown): boolean {
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  return a === b;
}

export class PooledKubeConfig extends KubeConfig {
  private pooled: https.Agent | undefined;

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const agent = context.getAgent();
    if (agent instanceof https.Agent) context.setAgent(this.pooledAgent(agent));
  }

  /** The shared agent for `fresh`'s TLS identity; `fresh` itself has no sockets yet and is dropped. */
  private pooledAgent(fresh: https.Agent): http.Agent {
    const want = fresh.options;
    const current = this.pooled;
    if (current !== undefined && IDENTITY_OPTIONS.every((k) => sameOption(current.options[k], want[k]))) return current;
    this.pooled = new https.Agent({
      ...want,
      keepAlive: true,
      maxFreeSockets: MAX_FREE_SOCKETS,
      timeout: IDLE_TIMEOUT_MS,
    });
    return this.pooled;
  }
}
