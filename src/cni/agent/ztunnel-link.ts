import type { WorkloadInfo } from '../../zds/workload-info.js';

/** One pod in the snapshot the node agent sends a ztunnel that connects (Istio `cni/pkg/nodeagent/ztunnelserver.go`). */
export interface SnapshotPod {
  readonly uid: string;
  readonly info: WorkloadInfo;
  /**
   * An fd on the pod's network namespace (sent with `AddWorkload`); undefined sends `KeepWorkload`. Stays the
   * caller's: it must be open when the snapshot callback returns (or its promise resolves), and is copied then.
   */
  readonly netns: number | undefined;
}

/**
 * The node agent's side of ZDS as the rest of the agent sees it: the ZDS server (`ztunnel-server.ts`) implements
 * it, enrollment (`AddPodToMesh` / `RemovePodFromMesh` in Istio `cni/pkg/nodeagent/net.go`) calls it.
 *
 * netns fds: every fd the caller passes (to `addWorkload`, in a snapshot) stays the caller's, and the link copies
 * it before the call returns (the snapshot callback's result as soon as it is there). The caller may close its fd
 * at any time after that, for instance when the netns cache drops the pod, even while the request still waits its
 * turn: ztunnel gets the namespace the fd was on at the call, never whatever later reuses the fd number.
 */
export interface ZtunnelLink {
  /**
   * Sends `AddWorkload` (with the netns fd) to the most recently connected ztunnel and resolves on its ack.
   * Rejects when no ztunnel is connected, when it nacks (the error names ztunnel's reason), or when no ack comes
   * within 5 s. `netns` stays the caller's and is copied before this returns.
   */
  addWorkload(uid: string, info: WorkloadInfo, netns: number): Promise<void>;
  /** Sends `DelWorkload` to every connected ztunnel (old and new during an upgrade); resolves once each acked or left. */
  delWorkload(uid: string): Promise<void>;
  /** True while at least one ztunnel is connected and has acked its snapshot. */
  readonly ready: boolean;
}
