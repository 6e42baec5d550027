import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { asObject, objectField, setDefault } from '../validation/json-fields.js';
import { defaultPodTemplate } from '../validation/pod-spec.js';
import { nonNegative, validateReplicatedTemplate, validateSelectorAndTemplate } from '../validation/replicated-spec.js';
import { validateSelectorUnchanged } from './deployment.js';
import { generationHooks } from './generation.js';

/**
 * apps/v1 ReplicaSets, after k8s.io/kubernetes `pkg/registry/apps/replicaset/strategy.go` (generation 1 on
 * create and bumped by spec changes, status kept on update, selector immutable), `pkg/apis/apps/v1/defaults.go`
 * (`SetDefaults_ReplicaSet`: one replica) and `pkg/apis/apps/validation/validation.go` (`ValidateReplicaSetSpec`).
 */

function defaultReplicaSet(obj: KubeObject): void {
  const spec = objectField(obj, 'spec');
  setDefault(spec, 'replicas', 1);
  defaultPodTemplate(objectField(spec, 'template'));
}

function validateReplicaSet(obj: KubeObject) {
  const spec = asObject(obj.spec) ?? {};
  return [
    ...nonNegative(spec.replicas, 'spec.replicas'),
    ...nonNegative(spec.minReadySeconds, 'spec.minReadySeconds'),
    ...validateSelectorAndTemplate(spec, 'spec'),
    ...validateReplicatedTemplate(spec, 'spec'),
  ];
}

export const replicaSetStrategy: Strategy = {
  ...generationHooks(defaultReplicaSet, { replicas: 0 }),
  validate: validateReplicaSet,
  validateUpdate(obj, old) {
    return [...validateReplicaSet(obj), ...validateSelectorUnchanged(obj, old)];
  },
};
