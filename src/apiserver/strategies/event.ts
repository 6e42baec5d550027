import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { invalid } from '../validation/field-errors.js';
import { asObject, asString } from '../validation/json-fields.js';

/**
 * Core/v1 Events, after k8s.io/kubernetes `pkg/apis/core/validation/validation.go` (`legacyValidateEvent`): an
 * event without `eventTime` must sit in its involved object's namespace (or in `default`, or none, for a
 * cluster-scoped object). Nothing else of a core/v1 Event is validated upstream.
 */

function validateEvent(obj: KubeObject): StatusCause[] {
  if ((asString(obj.eventTime) ?? '') !== '') return [];
  const namespace = asString(obj.metadata.namespace) ?? '';
  const involved = asString(asObject(obj.involvedObject)?.namespace) ?? '';
  const ok = involved === '' ? namespace === '' || namespace === 'default' : namespace === involved;
  return ok ? [] : [invalid('involvedObject.namespace', involved, 'does not match event.namespace')];
}

export const eventStrategy: Strategy = {
  validate: validateEvent,
  validateUpdate: validateEvent,
};
