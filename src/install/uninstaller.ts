/**
 * `amesh uninstall`'s work, as istioctl's (istio operator/cmd/mesh/uninstall.go, operator/pkg/uninstall/prune.go):
 * find the installed objects by their owner labels and delete them (foreground), printing
 * `  Removed <group/version, Kind=kind>/<name>.<namespace>.` for each. Without `--purge` only the objects of an
 * install's istiod, node agent and ztunnel of the revision (and IstioOperator name) given go, and cluster-scoped
 * objects but CRDs; `--purge` removes every object any install labelled with a component, CRDs included.
 */
import type { ClusterClient, LiveObject } from './cluster-client.js';
import { NAMESPACED_KINDS, CLUSTER_KINDS, PURGE_KINDS, type InstallKind } from './install-kinds.js';
import {
  COMPONENT_LABEL,
  OWNING_RESOURCE,
  OWNING_RESOURCE_NAMESPACE,
  REVISION_LABEL,
  selectorOf,
} from './owner-labels.js';

/** istioctl's warnings before an uninstall (operator/cmd/mesh/uninstall.go). */
export const ALL_RESOURCES_REMOVED_WARNING = 'All Istio resources will be pruned from the cluster';
export const NO_RESOURCES_REMOVED_WARNING =
  'No resources will be pruned from the cluster. Please double check the input configs';

/** Components a plain uninstall removes: not base (CRDs and base's objects stay for other revisions). */
const NON_BASE = ['Pilot', 'IngressGateways', 'EgressGateways', 'Cni', 'Ztunnel'];

export interface UninstallScope {
  readonly purge: boolean;
  readonly revision?: string;
  readonly owner?: { readonly name?: string; readonly namespace?: string };
}

export interface Found {
  readonly kind: InstallKind;
  readonly object: LiveObject;
}

/** The objects an uninstall of `scope` removes, in deletion order. */
export async function objectsToRemove(client: ClusterClient, scope: UninstallScope): Promise<Found[]> {
  let selector: string;
  if (scope.purge) selector = COMPONENT_LABEL;
  else {
    const labels: Record<string, string> = {};
    if (scope.revision !== undefined && scope.revision !== '') labels[REVISION_LABEL] = scope.revision;
    if (scope.owner?.name !== undefined && scope.owner.name !== '') labels[OWNING_RESOURCE] = scope.owner.name;
    if (scope.owner?.namespace !== undefined && scope.owner.namespace !== '')
      labels[OWNING_RESOURCE_NAMESPACE] = scope.owner.namespace;
    selector = [selectorOf(labels), `${COMPONENT_LABEL} in (${NON_BASE.join(',')})`].filter((s) => s !== '').join(',');
  }
  const found: Found[] = [];
  for (const kind of [...NAMESPACED_KINDS, ...(scope.purge ? PURGE_KINDS : CLUSTER_KINDS)])
    for (const object of await client.list(kind, selector)) found.push({ kind, object });
  return found;
}

/** How istioctl names an object it removes: `apps/v1, Kind=Deployment/istiod.istio-system`. */
export function removedName(f: Found): string {
  const [group, version] = f.kind.apiVersion.includes('/') ? f.kind.apiVersion.split('/') : ['', f.kind.apiVersion];
  return `${group!}/${version!}, Kind=${f.kind.kind}/${f.object.metadata.name}.${f.object.metadata.namespace ?? ''}`;
}

/** Deletes `found`, printing each as istioctl does (or only saying so, with `dryRun`). */
export async function removeObjects(
  client: ClusterClient,
  found: readonly Found[],
  print: (line: string) => void,
  dryRun = false,
): Promise<void> {
  for (const f of found) {
    const name = removedName(f);
    if (dryRun) print(`Not pruning object ${name} because of dry run.`);
    else if (await client.delete(f.kind, f.object.metadata.namespace, f.object.metadata.name))
      print(`  Removed ${name}.`);
    else print(`object: ${name} is not being deleted because it no longer exists`);
  }
}
