import type { Logger } from 'pino';
import type { ZtunnelConfig } from '../config.js';
import type { SecretManager } from '../identity/secret-manager.js';
import type { ProxyState } from '../state/proxy-state.js';
import type { ConnectionManager } from './connection-manager.js';
import type { HbonePool } from './hbone-pool.js';
import type { SocketFactory } from './socket-factory.js';

/** What every listener of a ztunnel shares. */
export interface ProxyContext {
  readonly config: ZtunnelConfig;
  readonly state: ProxyState;
  readonly secrets: SecretManager;
  readonly connections: ConnectionManager;
  readonly pool: HbonePool;
  readonly sockets: SocketFactory;
  readonly log: Logger;
}
