/**
 * Istio's RBAC objects, which `amesh up` applies through the API as an installer does: the Roles, ClusterRoles and
 * bindings of the istiod and istio-cni charts as `amesh manifest generate --set profile=ambient` renders them
 * (src/install), so the grants a cluster of `up` holds are those `amesh install` gives any cluster. ztunnel's
 * chart grants its account nothing outside OpenShift.
 */
import { generateManifest } from '../install/generate-manifest.js';
import { parseSetFlag } from '../install/set-flag.js';
import type { RbacObject } from './apply-rbac.js';

/** The namespace Istio's charts install into. */
export const ISTIO_NAMESPACE = 'istio-system';

const RBAC_KINDS = new Set(['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);

const AMBIENT = generateManifest({ files: [], sets: [parseSetFlag('profile=ambient')] }).sets;

/** The RBAC objects the ambient profile renders for one component, roles before the bindings that name them. */
function rbacOf(component: 'Pilot' | 'Cni'): readonly RbacObject[] {
  const objects = AMBIENT.find((s) => s.component.name === component)?.objects ?? [];
  const rbac = objects.filter((o) => RBAC_KINDS.has(o.kind)) as unknown as RbacObject[];
  return [...rbac.filter((o) => !o.kind?.endsWith('Binding')), ...rbac.filter((o) => o.kind?.endsWith('Binding'))];
}

/** istiod's grants (istio-discovery chart: istiod's, the gateway controller's, the istio reader's). */
export const ISTIOD_RBAC: readonly RbacObject[] = rbacOf('Pilot');
/** The node agent's grants (istio-cni chart). */
export const ISTIO_CNI_RBAC: readonly RbacObject[] = rbacOf('Cni');
