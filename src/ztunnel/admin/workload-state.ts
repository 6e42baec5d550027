import type { WorkloadInfo } from '../../zds/workload-info.js';
import type { ConnectionManager } from '../proxy/connection-manager.js';

/**
 * One entry of `/config_dump` `workloadState` (ztunnel `src/admin.rs`, the proxies' `WorkloadState`): whether the
 * proxy's listeners are up, who the workload is, and its open connections, under the proxy's key.
 */
export function workloadStateEntry(
  up: boolean,
  info: WorkloadInfo,
  connections: ConnectionManager,
  key: string,
): object {
  return {
    state: up ? 'Up' : 'Pending',
    info: { name: info.name, namespace: info.namespace, serviceAccount: info.serviceAccount },
    connections: connections.connectionsOf(key),
  };
}
