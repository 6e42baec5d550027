import type { StatusCause } from '../api-error.js';
import type { KubeObject } from '../kube-object.js';

/**
 * What a kind does beyond generic metadata handling, after k8s.io/apiserver's RESTCreateStrategy and
 * RESTUpdateStrategy: defaults and system fields on create, what an update of the main resource (or of the
 * `status` subresource) may change, and the kind's own validation. Every hook is optional. Validation returns
 * field causes; the HTTP layer turns a non-empty list into `422 Invalid`.
 */
export interface Strategy {
  /**
   * Kinds with a structural schema (custom resources): drops from a decoded body what the schema does not know,
   * fills in its defaults, and returns the dropped fields' paths (`spec.foo`) for the request's fieldValidation.
   */
  prune?(obj: KubeObject): string[];
  prepareForCreate?(obj: KubeObject): void;
  /** An update of the main resource: status is carried over from `old` for kinds with a status subresource. */
  prepareForUpdate?(obj: KubeObject, old: KubeObject): void;
  validate?(obj: KubeObject): StatusCause[];
  validateUpdate?(obj: KubeObject, old: KubeObject): StatusCause[];
  /** What a delete that names no propagationPolicy does to dependents (DefaultGarbageCollectionPolicy); Background if unset. */
  readonly defaultPropagationPolicy?: 'Orphan';
  /**
   * Kinds deleted gracefully (RESTGracefulDeleteStrategy `CheckGracefulDelete`): the grace period in seconds a
   * DELETE asking for `requested` (DeleteOptions.gracePeriodSeconds, if given) gives the object; 0 removes it now.
   */
  checkGracefulDelete?(obj: KubeObject, requested: number | undefined): number;
}
