import type { StatusCause } from '../api-error.js';
import type { JsonSchema } from '../schema/json-schema.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { customResourceSchema } from '../schema/custom-resource-schemas.js';
import { applyDefaults, pruneUnknownFields, validateAgainstSchema } from '../schema/schema-validator.js';
import { nextGeneration } from './generation.js';

/**
 * Kinds that a real cluster serves from CustomResourceDefinitions (Istio's and the Gateway API's), after
 * k8s.io/apiextensions-apiserver `pkg/registry/customresource/strategy.go` with the status subresource enabled:
 * status is dropped on create and kept on update, generation starts at 1 and counts every change outside
 * metadata and status. Bodies are pruned and defaulted by the kind's structural schema
 * (`src/apiserver/schema/`), and objects validated against it; kinds of stored CRDs use the CRD's schema.
 */

function tracked(o: KubeObject): unknown {
  return { ...o, metadata: undefined, status: undefined };
}

/** The strategy of custom kinds whose schema `schemaOf` finds for an object. */
export function customResourceStrategyWith(schemaOf: (obj: KubeObject) => JsonSchema | undefined): Strategy {
  const validate = (obj: KubeObject): StatusCause[] => {
    const schema = schemaOf(obj);
    return schema === undefined ? [] : validateAgainstSchema(obj, schema);
  };
  return {
    prune(obj) {
      const schema = schemaOf(obj);
      if (schema === undefined) return [];
      const pruned = pruneUnknownFields(obj, schema);
      applyDefaults(obj, schema);
      return pruned;
    },
    prepareForCreate(obj) {
      delete obj.status;
      obj.metadata.generation = 1;
    },
    prepareForUpdate(obj, old) {
      nextGeneration(obj, old, tracked);
    },
    validate,
    validateUpdate: validate,
  };
}

/** The strategy of the custom kinds the server has built in, their schemas found by apiVersion and kind. */
export const customResourceStrategy: Strategy = customResourceStrategyWith((obj) =>
  customResourceSchema(obj.apiVersion, obj.kind),
);
