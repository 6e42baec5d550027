import type { WorkloadInfo } from '../../zds/workload-info.js';

/**
 * One entry of `/config_dump` `workloadState` (ztunnel `src/admin.rs`, the proxies' `WorkloadState`): whether the
 * proxy's listeners are up, who the workload is, and its open connections.
 */
export function workloadStateEntry(
  up: boolean,
  info: WorkloadInfo,
  connections: { readonly inbound: readonly object[]; readonly outbound: readonly object[] },
): object {
  return {
    state: up ? 'Up' : 'Pending',
    info: { name: info.name, namespace: info.namespace, serviceAccount: info.serviceAccount },
    connections,
  };
}
