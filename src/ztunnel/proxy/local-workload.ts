import type { WorkloadInfo } from '../../zds/workload-info.js';
import { WORKLOAD_WAIT_MS } from '../config.js';
import type { ProxyState } from '../state/proxy-state.js';
import { workloadIdentity, type Workload } from '../state/workload.js';

/**
 * The workload a set of listeners proxies for (ztunnel `src/proxy.rs` `LocalWorkloadInformation`), looked up at
 * each connection, so listeners can run before istiod has sent the workload: in-pod, a pod's listeners start at
 * ZDS `AddWorkload`, before the pod has its IP in its status and so before it is a WDS workload.
 */
export class LocalWorkloadInformation {
  private constructor(
    private readonly state: ProxyState,
    /** The proxy's key: the WDS uid in local mode, the pod UID (ZDS) in in-pod mode. Connections are tracked under it. */
    readonly key: string,
    private readonly find: (state: ProxyState) => Workload | undefined,
  ) {}

  /** Local mode: the workload is the WDS workload `uid`. */
  static byUid(state: ProxyState, uid: string): LocalWorkloadInformation {
    return new LocalWorkloadInformation(state, uid, (s) => s.workloadByUid(uid));
  }

  /**
   * In-pod mode: the workload on `node` with ZDS's name, namespace and service account (ztunnel `src/state/workload.rs`
   * `find_by_info`, which narrows to the node's workloads too).
   */
  static byInfo(state: ProxyState, node: string, podUid: string, info: WorkloadInfo): LocalWorkloadInformation {
    return new LocalWorkloadInformation(state, podUid, (s) =>
      s
        .workloadsOnNode(node)
        .find(
          (w) =>
            w.name === info.name &&
            w.namespace === info.namespace &&
            workloadIdentity(w).serviceAccount === info.serviceAccount,
        ),
    );
  }

  /** The workload as the state holds it now. */
  current(): Workload | undefined {
    return this.find(this.state);
  }

  /** The workload, waiting up to WORKLOAD_WAIT_MS for it to arrive (ztunnel `wait_for_workload`); undefined if it does not. */
  wait(): Promise<Workload | undefined> {
    const now = this.current();
    if (now !== undefined) return Promise.resolve(now);
    return new Promise((resolve) => {
      const done = (w: Workload | undefined): void => {
        clearTimeout(timer);
        this.state.off('change', onChange);
        resolve(w);
      };
      const onChange = (): void => {
        const w = this.current();
        if (w !== undefined) done(w);
      };
      const timer = setTimeout(() => done(undefined), WORKLOAD_WAIT_MS);
      this.state.on('change', onChange);
    });
  }
}
