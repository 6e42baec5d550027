/**
 * What ZDS says about a pod (ztunnel `proto/zds.proto` `WorkloadInfo`): the node agent sends it with every
 * `AddWorkload`, and in-pod ztunnel matches it against the workloads istiod serves to find the pod's identity.
 */
export interface WorkloadInfo {
  readonly name: string;
  readonly namespace: string;
  readonly serviceAccount: string;
}
