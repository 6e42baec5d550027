import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { forbidden, invalid } from '../validation/field-errors.js';
import { asNumber, asObject, objectField, setDefault } from '../validation/json-fields.js';
import type { JsonObject } from '../validation/json-fields.js';
import { goLabelSelector } from '../validation/label-selector.js';
import { immutable } from '../validation/object-meta.js';
import { defaultPodTemplate, oneOf } from '../validation/pod-spec.js';
import { nonNegative, validateReplicatedTemplate, validateSelectorAndTemplate } from '../validation/replicated-spec.js';
import { generationHooks } from './generation.js';

/**
 * apps/v1 Deployments, after k8s.io/kubernetes `pkg/registry/apps/deployment/strategy.go` (generation 1 on
 * create, bumped by spec or annotation changes; status kept on update; the selector is immutable outside
 * extensions/v1beta1), `pkg/apis/apps/v1/defaults.go` (`SetDefaults_Deployment`) and
 * `pkg/apis/apps/validation/validation.go` (`ValidateDeploymentSpec`).
 */

/** A Deployment runs one replica, keeps 10 old ReplicaSets and reports no progress after 600 s by default. */
export const DEFAULT_DEPLOYMENT = { replicas: 1, revisionHistoryLimit: 10, progressDeadlineSeconds: 600 } as const;
/** A rolling update may take down and add a quarter of the replicas at a time by default. */
export const DEFAULT_ROLLING_UPDATE = { maxUnavailable: '25%', maxSurge: '25%' } as const;

const STRATEGY_TYPES = ['Recreate', 'RollingUpdate'];

function specOf(obj: KubeObject): JsonObject {
  return asObject(obj.spec) ?? {};
}

function defaultDeployment(obj: KubeObject): void {
  const spec = objectField(obj, 'spec');
  for (const [k, v] of Object.entries(DEFAULT_DEPLOYMENT)) setDefault(spec, k, v);
  const strategy = objectField(spec, 'strategy');
  setDefault(strategy, 'type', 'RollingUpdate');
  if (strategy.type === 'RollingUpdate') {
    const rolling = objectField(strategy, 'rollingUpdate');
    for (const [k, v] of Object.entries(DEFAULT_ROLLING_UPDATE)) setDefault(rolling, k, v);
  }
  defaultPodTemplate(objectField(spec, 'template'));
}

export function validateDeployment(obj: KubeObject): StatusCause[] {
  const spec = specOf(obj);
  const errs = [
    ...nonNegative(spec.replicas, 'spec.replicas'),
    ...validateSelectorAndTemplate(spec, 'spec'),
    ...validateReplicatedTemplate(spec, 'spec'),
  ];
  const strategy = asObject(spec.strategy) ?? {};
  errs.push(...oneOf(strategy.type, 'spec.strategy.type', STRATEGY_TYPES));
  if (strategy.type === 'Recreate' && strategy.rollingUpdate !== undefined && strategy.rollingUpdate !== null)
    errs.push(forbidden('spec.strategy.rollingUpdate', "may not be specified when strategy `type` is 'Recreate'"));
  errs.push(...nonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  errs.push(...nonNegative(spec.revisionHistoryLimit, 'spec.revisionHistoryLimit'));
  const deadline = asNumber(spec.progressDeadlineSeconds);
  if (deadline !== undefined) {
    errs.push(...nonNegative(deadline, 'spec.progressDeadlineSeconds'));
    if (deadline <= (asNumber(spec.minReadySeconds) ?? 0))
      errs.push(invalid('spec.progressDeadlineSeconds', deadline, 'must be greater than minReadySeconds'));
  }
  return errs;
}

/** The selector may not change in apps/v1 (`ValidateImmutableField` on `spec.selector`). */
export function validateSelectorUnchanged(obj: KubeObject, old: KubeObject): StatusCause[] {
  const now = asObject(specOf(obj).selector);
  return immutable('spec.selector', now ?? null, asObject(specOf(old).selector) ?? null, goLabelSelector(now));
}

export const deploymentStrategy: Strategy = {
  ...generationHooks(defaultDeployment, {}, (o) => [o.spec, o.metadata.annotations]),
  validate: validateDeployment,
  validateUpdate(obj, old) {
    return [...validateDeployment(obj), ...validateSelectorUnchanged(obj, old)];
  },
};
