import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { invalid } from '../validation/field-errors.js';
import { asNumber, asObject } from '../validation/json-fields.js';
import { nonNegative } from '../validation/replicated-spec.js';

/**
 * coordination.k8s.io/v1 Leases, which kubelets renew as their heartbeat and components hold for leader election,
 * after k8s.io/kubernetes `pkg/apis/coordination/validation/validation.go` (`ValidateLeaseSpec`: a positive
 * duration, no negative transitions).
 */

function validateLease(obj: KubeObject): StatusCause[] {
  const spec = asObject(obj.spec) ?? {};
  const duration = asNumber(spec.leaseDurationSeconds);
  return [
    ...(duration !== undefined && duration <= 0
      ? [invalid('spec.leaseDurationSeconds', duration, 'must be greater than 0')]
      : []),
    ...nonNegative(spec.leaseTransitions, 'spec.leaseTransitions'),
  ];
}

export const leaseStrategy: Strategy = { validate: validateLease, validateUpdate: validateLease };
