import type { WorkloadInfo } from '../../zds/workload-info.js';

/**
 * What ztunnel's ZDS state manager (ztunnel `src/inpod/statemanager.rs`) drives: the proxies of the pods on this
 * node, each listening inside its pod's network namespace. The state manager decides what runs (snapshot, Add,
 * Keep, Del, retries); a runner only starts and stops one pod's listeners.
 */
export interface InpodProxyRunner {
  /**
   * Starts the listeners of pod `uid` inside `netns` (15001, 15006, 15008, 15053). Resolves once every listener
   * is bound; rejects, with nothing left bound, when one cannot be. The runner takes `netns` (an fd on the pod's
   * network namespace) on success and closes it when the pod stops; on failure the fd stays the caller's.
   */
  start(uid: string, info: WorkloadInfo, netns: number): Promise<void>;
  /** Stops pod `uid`'s listeners at once and closes its connections (ZDS `Del`, or a pod left out of a snapshot). */
  stop(uid: string): void;
}
