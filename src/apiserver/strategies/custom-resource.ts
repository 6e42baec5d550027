import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { asObject } from '../validation/json-fields.js';
import { nextGeneration } from './generation.js';

/**
 * Kinds that a real cluster serves from CustomResourceDefinitions (Istio's and the Gateway API's), after
 * k8s.io/apiextensions-apiserver `pkg/registry/customresource/strategy.go` with the status subresource enabled:
 * status is dropped on create and kept on update, generation starts at 1 and counts every change outside
 * metadata and status. Their CRD schemas are not carried here; the one structural rule kept is that `spec`,
 * when present, is an object, refused as the schema validator words it.
 */

/** The OpenAPI type name of a JSON value, as the schema validator reports a mismatch. */
function schemaTypeOf(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function validateCustomResource(obj: KubeObject): StatusCause[] {
  const spec = obj.spec;
  if (spec === undefined || spec === null || asObject(spec) !== undefined) return [];
  const type = schemaTypeOf(spec);
  return [
    {
      reason: 'FieldValueTypeInvalid',
      field: 'spec',
      message: `Invalid value: "${type}": spec in body must be of type object: "${type}"`,
    },
  ];
}

function tracked(o: KubeObject): unknown {
  return { ...o, metadata: undefined, status: undefined };
}

export const customResourceStrategy: Strategy = {
  prepareForCreate(obj) {
    delete obj.status;
    obj.metadata.generation = 1;
  },
  prepareForUpdate(obj, old) {
    nextGeneration(obj, old, tracked);
  },
  validate: validateCustomResource,
  validateUpdate: validateCustomResource,
};
