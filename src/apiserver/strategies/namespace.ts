import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { invalid } from '../validation/field-errors.js';
import { isQualifiedName } from '../validation/formats.js';
import { asArray, asObject, asString, objectField } from '../validation/json-fields.js';
import { validateKubeFinalizerName } from '../validation/object-meta.js';
import { keepStatus } from './generation.js';

/**
 * Namespaces, after k8s.io/kubernetes `pkg/registry/core/namespace/strategy.go`: created `Active` with the
 * `kubernetes` finalizer (which the namespace controller removes once the contents are gone); an update keeps
 * status and `spec.finalizers` (only the `finalize` subresource changes them). Every namespace carries the
 * immutable `kubernetes.io/metadata.name` label (`SetDefaults_Namespace`).
 */

/** The finalizer the API server's namespace lifecycle owns (`FinalizerKubernetes`). */
export const NAMESPACE_FINALIZER = 'kubernetes';
/** Set on every namespace to its own name, so label selectors can pick namespaces by name. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

function labelWithName(obj: KubeObject): void {
  const name = asString(obj.metadata.name);
  if (name === undefined) return;
  obj.metadata.labels = {
    ...(asObject(obj.metadata.labels) as Record<string, string> | undefined),
    [NAMESPACE_NAME_LABEL]: name,
  };
}

export const namespaceStrategy: Strategy = {
  prepareForCreate(obj) {
    labelWithName(obj);
    const spec = objectField(obj, 'spec');
    const finalizers = (asArray(spec.finalizers) ?? []).filter((f) => typeof f === 'string');
    if (!finalizers.includes(NAMESPACE_FINALIZER)) finalizers.push(NAMESPACE_FINALIZER);
    spec.finalizers = finalizers;
    obj.status = { phase: 'Active' };
  },
  prepareForUpdate(obj, old) {
    labelWithName(obj);
    const oldFinalizers = asObject(old.spec)?.finalizers;
    const spec = objectField(obj, 'spec');
    if (oldFinalizers === undefined) delete spec.finalizers;
    else spec.finalizers = structuredClone(oldFinalizers);
    keepStatus(obj, old);
  },
  validate(obj) {
    const errs: StatusCause[] = [];
    for (const f of asArray(asObject(obj.spec)?.finalizers) ?? []) {
      const name = asString(f) ?? '';
      for (const m of isQualifiedName(name)) errs.push(invalid('spec.finalizers', name, m));
      errs.push(...validateKubeFinalizerName(name, 'spec.finalizers'));
    }
    return errs;
  },
};
