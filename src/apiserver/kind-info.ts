import type { JsonSchema } from './schema/json-schema.js';
import type { Strategy } from './strategies/strategy.js';

/** What a kind serves under `<object>/<subresource>` besides the object itself. */
export type Subresource = 'status' | 'token' | 'binding' | 'scale';

/** One served kind. Adding a kind to the API server is adding one entry to `KINDS` (kinds.ts). */
export interface KindInfo {
  /** API group; '' is the core group (`/api/v1`). */
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  /** Resource name in URLs: `pods`, `authorizationpolicies`. */
  readonly plural: string;
  readonly singular: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  /** Discovery categories (`kubectl get all` lists the `all` category). */
  readonly categories: readonly string[];
  readonly subresources: readonly Subresource[];
  /** Create-only review kinds (TokenReview, SubjectAccessReview): answered, never stored. */
  readonly review: boolean;
  readonly strategy: Strategy | undefined;
  /**
   * Set when this version is served but not stored (a custom kind's other served versions, conversion `None`): the
   * version objects are stored and read at. Responses carry this version's apiVersion; nothing else differs.
   */
  readonly storageVersion?: string;
  /** A kind served from a stored CustomResourceDefinition: its schema (built-in custom kinds find theirs by name). */
  readonly schema?: JsonSchema;
}
