import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { required } from '../validation/field-errors.js';
import { immutable } from '../validation/object-meta.js';
import { nonNegative } from '../validation/replicated-spec.js';

/**
 * apps/v1 ControllerRevisions, the history DaemonSets and StatefulSets keep of their templates, after
 * k8s.io/kubernetes `pkg/apis/apps/validation/validation.go` (`ValidateControllerRevision`: `data` is required
 * and a revision is never negative; `ValidateControllerRevisionUpdate`: `data` never changes).
 */

function validateControllerRevision(obj: KubeObject): StatusCause[] {
  return [
    ...(obj.data === undefined || obj.data === null ? [required('data')] : []),
    ...nonNegative(obj.revision, 'revision'),
  ];
}

export const controllerRevisionStrategy: Strategy = {
  validate: validateControllerRevision,
  validateUpdate(obj, old) {
    return [...validateControllerRevision(obj), ...immutable('data', obj.data ?? null, old.data ?? null)];
  },
};
