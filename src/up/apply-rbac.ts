/**
 * Applies RBAC objects through the API as an installer does (`kubectl apply`, Helm): each is created, or replaced
 * when it exists, roles before the bindings that refer to them as the caller orders them. `amesh up` installs
 * Istio's and the cluster DNS's grants this way; the API server holds none of its own beyond Kubernetes'
 * bootstrap policy.
 */
import {
  type KubeConfig,
  RbacAuthorizationV1Api,
  type V1ClusterRole,
  type V1ClusterRoleBinding,
  type V1Role,
  type V1RoleBinding,
} from '@kubernetes/client-node';
import { ignoreConflict } from '../kube/kube-status.js';

export type RbacObject = V1ClusterRole | V1ClusterRoleBinding | V1Role | V1RoleBinding;

/** Creates with `create()`, or replaces with `replace()` when the object already exists. */
async function createOrReplace(create: () => Promise<unknown>, replace: () => Promise<unknown>): Promise<void> {
  const created = await create().then(
    () => true,
    (e: unknown) => {
      ignoreConflict(e);
      return false;
    },
  );
  if (!created) await replace();
}

export async function applyRbac(kc: KubeConfig, objects: readonly RbacObject[]): Promise<void> {
  const api = kc.makeApiClient(RbacAuthorizationV1Api);
  for (const o of objects) {
    const name = o.metadata?.name ?? '';
    const namespace = o.metadata?.namespace ?? '';
    switch (o.kind) {
      case 'ClusterRole':
        await createOrReplace(
          () => api.createClusterRole({ body: o }),
          () => api.replaceClusterRole({ name, body: o }),
        );
        break;
      case 'ClusterRoleBinding':
        await createOrReplace(
          () => api.createClusterRoleBinding({ body: o as V1ClusterRoleBinding }),
          () => api.replaceClusterRoleBinding({ name, body: o as V1ClusterRoleBinding }),
        );
        break;
      case 'Role':
        await createOrReplace(
          () => api.createNamespacedRole({ namespace, body: o }),
          () => api.replaceNamespacedRole({ name, namespace, body: o }),
        );
        break;
      case 'RoleBinding':
        await createOrReplace(
          () => api.createNamespacedRoleBinding({ namespace, body: o as V1RoleBinding }),
          () => api.replaceNamespacedRoleBinding({ name, namespace, body: o as V1RoleBinding }),
        );
        break;
      default:
        throw new Error(`applyRbac: ${String(o.kind)} is not an RBAC kind`);
    }
  }
}
