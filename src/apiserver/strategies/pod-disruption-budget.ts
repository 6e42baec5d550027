import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { invalid, jsonValue, notSupported } from '../validation/field-errors.js';
import { asObject, asString } from '../validation/json-fields.js';
import { validateLabelSelector } from '../validation/label-selector.js';
import { validateIntOrPercent } from '../validation/replicated-spec.js';
import { generationHooks } from './generation.js';

/**
 * policy/v1 PodDisruptionBudgets, stored and validated as kubernetes `pkg/registry/policy/poddisruptionbudget/
 * strategy.go` (generation 1 and an empty status on create, bumped by spec changes; status only through the
 * `status` subresource) and `pkg/apis/policy/validation/validation.go` (`ValidatePodDisruptionBudgetSpec`: one of
 * minAvailable and maxUnavailable at most, each a non-negative count or a percentage up to 100%; a valid
 * selector; a known unhealthyPodEvictionPolicy) check them. There is no disruption controller: nothing computes
 * their status or evicts by them; Istio's gateway controller and charts create them and expect them stored.
 */

const EVICTION_POLICIES = ['AlwaysAllow', 'IfHealthyBudget'];
/** The v1 status of a new budget: its counts are always serialized. */
const INITIAL_STATUS = { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 };

function validatePodDisruptionBudget(obj: KubeObject): StatusCause[] {
  const spec = asObject(obj.spec) ?? {};
  const errs: StatusCause[] = [];
  const set = (v: unknown): boolean => v !== undefined && v !== null;
  if (set(spec.minAvailable) && set(spec.maxUnavailable))
    errs.push(invalid('spec', jsonValue(spec), 'minAvailable and maxUnavailable cannot be both set'));
  errs.push(...validateIntOrPercent(spec.minAvailable, 'spec.minAvailable'));
  errs.push(...validateIntOrPercent(spec.maxUnavailable, 'spec.maxUnavailable'));
  const selector = asObject(spec.selector);
  if (selector !== undefined) errs.push(...validateLabelSelector(selector, 'spec.selector'));
  const policy = asString(spec.unhealthyPodEvictionPolicy);
  if (policy !== undefined && !EVICTION_POLICIES.includes(policy))
    errs.push(notSupported('spec.unhealthyPodEvictionPolicy', policy, EVICTION_POLICIES));
  return errs;
}

export const podDisruptionBudgetStrategy: Strategy = {
  ...generationHooks(() => undefined, INITIAL_STATUS),
  validate: validatePodDisruptionBudget,
  validateUpdate: validatePodDisruptionBudget,
};
