/**
 * The labels istioctl puts on every object it installs, by which a later install prunes and an uninstall finds
 * them (istio operator/pkg/install/install.go getOwnerLabels, operator/pkg/manifest/name.go).
 */
import { VERSION } from '../lib/version.js';
import type { RenderedObject } from './chart-helpers.js';
import { getString, type Tree } from './value-tree.js';

export const OPERATOR_MANAGED = 'operator.istio.io/managed';
export const OPERATOR_VERSION = 'operator.istio.io/version';
export const OWNING_RESOURCE = 'install.operator.istio.io/owning-resource';
export const OWNING_RESOURCE_NAMESPACE = 'install.operator.istio.io/owning-resource-namespace';
/** An object labelled `true` is never pruned. */
export const OWNING_RESOURCE_NOT_PRUNED = 'install.operator.istio.io/owning-resource-not-pruned';
export const COMPONENT_LABEL = 'operator.istio.io/component';
export const REVISION_LABEL = 'istio.io/rev';

/** The owner labels of an install of `iop`: its name and namespace, its revision, and the component when given. */
export function ownerLabels(iop: Readonly<Tree>, component?: string): Record<string, string> {
  const name = getString(iop, ['metadata', 'name']);
  const namespace = getString(iop, ['metadata', 'namespace']);
  return {
    [OPERATOR_MANAGED]: 'Reconcile',
    [OPERATOR_VERSION]: VERSION,
    ...(name === '' ? {} : { [OWNING_RESOURCE]: name }),
    ...(namespace === '' ? {} : { [OWNING_RESOURCE_NAMESPACE]: namespace }),
    [REVISION_LABEL]: getString(iop, ['spec', 'values', 'revision'], 'default'),
    ...(component === undefined ? {} : { [COMPONENT_LABEL]: component }),
  };
}

/** `o` with the owner labels of `component` added (over the chart's). */
export function withOwnerLabels(o: RenderedObject, iop: Readonly<Tree>, component: string): RenderedObject {
  return { ...o, metadata: { ...o.metadata, labels: { ...o.metadata.labels, ...ownerLabels(iop, component) } } };
}

/** A label selector (`k=v,k2=v2`) for `labels`. */
export function selectorOf(labels: Readonly<Record<string, string>>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}
