import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { child, invalid, notSupported, required } from '../validation/field-errors.js';
import { asObject, objectField, setDefault } from '../validation/json-fields.js';
import type { JsonObject } from '../validation/json-fields.js';
import { defaultPodTemplate } from '../validation/pod-spec.js';
import {
  nonNegative,
  validateIntOrPercent,
  validateReplicatedTemplate,
  validateSelectorAndTemplate,
} from '../validation/replicated-spec.js';
import { validateSelectorUnchanged } from './deployment.js';
import { generationHooks } from './generation.js';

/**
 * apps/v1 DaemonSets, after k8s.io/kubernetes `pkg/registry/apps/daemonset/strategy.go` (generation 1 on create
 * and bumped by spec changes, status kept on update, selector immutable), `pkg/apis/apps/v1/defaults.go`
 * (`SetDefaults_DaemonSet`: RollingUpdate with maxUnavailable 1 and maxSurge 0, 10 revisions kept) and
 * `pkg/apis/apps/validation/validation.go` (`ValidateDaemonSetSpec`, `ValidateDaemonSetUpdateStrategy`).
 */

const UPDATE_STRATEGIES = ['RollingUpdate', 'OnDelete'];

function defaultDaemonSet(obj: KubeObject): void {
  const spec = objectField(obj, 'spec');
  const strategy = objectField(spec, 'updateStrategy');
  setDefault(strategy, 'type', 'RollingUpdate');
  if (strategy.type === 'RollingUpdate') {
    const rolling = objectField(strategy, 'rollingUpdate');
    setDefault(rolling, 'maxUnavailable', 1);
    setDefault(rolling, 'maxSurge', 0);
  }
  setDefault(spec, 'revisionHistoryLimit', 10);
  defaultPodTemplate(objectField(spec, 'template'));
}

function validateUpdateStrategy(strategy: JsonObject, path: string): StatusCause[] {
  if (strategy.type === 'OnDelete') return [];
  if (strategy.type !== 'RollingUpdate') return [notSupported(path, JSON.stringify(strategy), UPDATE_STRATEGIES)];
  const rolling = asObject(strategy.rollingUpdate);
  if (rolling === undefined) return [required(child(path, 'rollingUpdate'))];
  const at = child(path, 'rollingUpdate');
  const errs = [
    ...validateIntOrPercent(rolling.maxUnavailable, child(at, 'maxUnavailable')),
    ...validateIntOrPercent(rolling.maxSurge, child(at, 'maxSurge')),
  ];
  const zero = (v: unknown): boolean => v === undefined || v === null || v === 0 || v === '0%';
  if (errs.length === 0 && zero(rolling.maxUnavailable) && zero(rolling.maxSurge))
    errs.push(invalid(child(at, 'maxUnavailable'), 0, 'may not be 0 when `maxSurge` is 0'));
  return errs;
}

function validateDaemonSet(obj: KubeObject): StatusCause[] {
  const spec = asObject(obj.spec) ?? {};
  return [
    ...validateSelectorAndTemplate(spec, 'spec', false, 'daemonset'),
    ...validateReplicatedTemplate(spec, 'spec', 'DaemonSet'),
    ...nonNegative(spec.minReadySeconds, 'spec.minReadySeconds'),
    ...validateUpdateStrategy(asObject(spec.updateStrategy) ?? {}, 'spec.updateStrategy'),
    ...nonNegative(spec.revisionHistoryLimit, 'spec.revisionHistoryLimit'),
  ];
}

export const daemonSetStrategy: Strategy = {
  ...generationHooks(defaultDaemonSet, {
    currentNumberScheduled: 0,
    numberMisscheduled: 0,
    desiredNumberScheduled: 0,
    numberReady: 0,
  }),
  validate: validateDaemonSet,
  validateUpdate(obj, old) {
    return [...validateDaemonSet(obj), ...validateSelectorUnchanged(obj, old)];
  },
};
