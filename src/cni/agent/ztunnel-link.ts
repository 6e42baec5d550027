import type { WorkloadInfo } from '../../zds/workload-info.js';

/** One pod in the snapshot the node agent sends a ztunnel that connects (Istio `cni/pkg/nodeagent/ztunnelserver.go`). */
export interface SnapshotPod {
  readonly uid: string;
  readonly info: WorkloadInfo;
  /** An fd on the pod's network namespace (sent with `AddWorkload`); undefined sends `KeepWorkload`. Stays the caller's. */
  readonly netns: number | undefined;
}

/**
 * The node agent's side of ZDS as the rest of the agent sees it: the ZDS server (`ztunnel-server.ts`) implements
 * it, enrollment (`AddPodToMesh` / `RemovePodFromMesh` in Istio `cni/pkg/nodeagent/net.go`) calls it.
 */
export interface ZtunnelLink {
  /**
   * Sends `AddWorkload` (with the netns fd) to the most recently connected ztunnel and resolves on its ack.
   * Rejects when no ztunnel is connected, when it nacks (the error names ztunnel's reason), or when no ack comes
   * within 5 s. `netns` stays the caller's.
   */
  addWorkload(uid: string, info: WorkloadInfo, netns: number): Promise<void>;
  /** Sends `DelWorkload` to every connected ztunnel (old and new during an upgrade); resolves once each acked or left. */
  delWorkload(uid: string): Promise<void>;
  /** True while at least one ztunnel is connected and has acked its snapshot. */
  readonly ready: boolean;
}
