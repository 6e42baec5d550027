/**
 * Ownership and pod state as Kubernetes' controllers read them (k8s.io/kubernetes `pkg/controller/`
 * controller_utils.go and `pkg/api/v1/pod/util.go`): an object's controller is the owner reference marked
 * `controller: true`, a pod is active until it succeeds, fails or is being deleted, and ready when its Ready
 * condition is True.
 */
import type { V1ObjectMeta, V1OwnerReference, V1Pod } from '@kubernetes/client-node';

export function controllerOf(meta: V1ObjectMeta | undefined): V1OwnerReference | undefined {
  return meta?.ownerReferences?.find((r) => r.controller === true);
}

/** The reference a controller sets on what it creates: it owns it, and foreground deletion waits for it. */
export function controllerReference(apiVersion: string, kind: string, owner: V1ObjectMeta): V1OwnerReference {
  return { apiVersion, kind, name: owner.name ?? '', uid: owner.uid ?? '', controller: true, blockOwnerDeletion: true };
}

export function isPodActive(p: V1Pod): boolean {
  return p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed' && p.metadata?.deletionTimestamp === undefined;
}

export function isPodReady(p: V1Pod): boolean {
  return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

/** `namespace/name`, the key controllers queue objects by. */
export function keyOf(meta: V1ObjectMeta | undefined): string {
  return `${meta?.namespace ?? ''}/${meta?.name ?? ''}`;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf('/');
  return { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
