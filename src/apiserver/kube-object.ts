/**
 * The shape every object stored and served by the embedded API server has: Kubernetes' TypeMeta and
 * ObjectMeta (k8s.io/apimachinery pkg/apis/meta/v1 types.go). Kind-specific fields stay untyped here; each
 * kind's strategy checks what it needs.
 */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  [field: string]: unknown;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** A list as the API serves it (`PodList` and so on). */
export interface KubeList {
  apiVersion: string;
  kind: string;
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: KubeObject[];
}

/** One event of a watch stream (k8s.io/apimachinery pkg/watch). */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
export interface WatchEvent {
  type: WatchEventType;
  object: KubeObject;
}
