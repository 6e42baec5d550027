/**
 * The part of a CustomResourceDefinition's `openAPIV3Schema` (k8s.io/apiextensions-apiserver `JSONSchemaProps`,
 * apiextensions.k8s.io/v1) the API server reads: the same value validates and prunes objects
 * (`schema-validator.ts`), is served as the kind's OpenAPI v3 component, and is written into the CRDs the
 * installer applies. Field names are the wire names, so a schema is JSON as a CRD carries it.
 */
export interface JsonSchema {
  readonly type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  readonly description?: string;
  readonly format?: string;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly additionalProperties?: JsonSchema | boolean;
  readonly items?: JsonSchema;
  readonly required?: readonly string[];
  readonly enum?: readonly unknown[];
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: boolean;
  readonly exclusiveMaximum?: boolean;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly minProperties?: number;
  readonly maxProperties?: number;
  readonly pattern?: string;
  readonly nullable?: boolean;
  readonly default?: unknown;
  readonly oneOf?: readonly JsonSchema[];
  readonly anyOf?: readonly JsonSchema[];
  readonly allOf?: readonly JsonSchema[];
  readonly not?: JsonSchema;
  readonly 'x-kubernetes-preserve-unknown-fields'?: boolean;
  readonly 'x-kubernetes-int-or-string'?: boolean;
  readonly 'x-kubernetes-embedded-resource'?: boolean;
  readonly 'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  readonly 'x-kubernetes-list-map-keys'?: readonly string[];
  readonly 'x-kubernetes-map-type'?: 'atomic' | 'granular';
  /** CEL rules: carried into CRDs and OpenAPI, not evaluated by this server. */
  readonly 'x-kubernetes-validations'?: readonly { readonly rule: string; readonly message?: string }[];
}

/** One `additionalPrinterColumns` entry of a CRD version. */
export interface PrinterColumn {
  readonly name: string;
  readonly type: string;
  readonly jsonPath: string;
  readonly description?: string;
}

/** One entry of a CRD's `spec.versions`, without its schema. */
export interface CrdVersion {
  readonly name: string;
  readonly served: boolean;
  readonly storage: boolean;
  readonly deprecated?: boolean;
  readonly deprecationWarning?: string;
}

/**
 * What a CustomResourceDefinition says of one kind, its schema the same in every version (as Istio's and the Gateway
 * API's CRDs have it): enough to serve the kind and to write its CRD.
 */
export interface CustomResourceSource {
  readonly group: string;
  readonly kind: string;
  readonly plural: string;
  readonly singular: string;
  readonly listKind: string;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly versions: readonly CrdVersion[];
  readonly printerColumns: readonly PrinterColumn[];
  /** The whole object's `openAPIV3Schema`: `spec` and `status` (apiVersion, kind and metadata are implied). */
  readonly schema: JsonSchema;
}
