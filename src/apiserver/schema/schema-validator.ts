/**
 * A custom resource checked against its CRD's structural schema, as kube-apiserver does it
 * (k8s.io/apiextensions-apiserver `pkg/apiserver/schema/pruning` and `pkg/apiserver/validation`, over
 * k8s.io/kube-openapi `pkg/validation/validate`):
 * - {@link pruneUnknownFields} drops what the schema does not know (a field not in `properties`, unless
 *   `x-kubernetes-preserve-unknown-fields`; unknown `metadata` fields) and returns the dropped paths for
 *   `fieldValidation` (`unknown field "spec.foo"`); a null where the schema is not `nullable` goes too, silently.
 * - {@link applyDefaults} fills in the schema's `default`s for absent fields, as structural defaulting does.
 * - {@link validateAgainstSchema} returns the field errors, worded as kube-openapi's errors reach clients through
 *   apiextensions' conversion: `spec.action: Unsupported value: "DENYX": supported values: "ALLOW", ...`,
 *   `spec.rules: Invalid value: "string": spec.rules in body must be of type array: "string"`, `Required value`,
 *   `Too many`, `Too long`, and for a oneOf `<nil>: Invalid value: "": "spec" must validate one and only one
 *   schema (oneOf). Found 2 valid alternatives`.
 * Formats are not checked (kube-apiserver checks few, and Istio's and the Gateway API's schemas rely on none);
 * CEL rules (`x-kubernetes-validations`) are not evaluated.
 */
import type { StatusCause } from '../api-error.js';
import {
  child,
  index,
  invalid,
  notSupported,
  required,
  tooLong,
  tooMany,
  typeInvalid,
} from '../validation/field-errors.js';
import type { JsonSchema } from './json-schema.js';

/** ObjectMeta's fields: anything else under a custom resource's `metadata` is pruned. */
const OBJECT_META_FIELDS = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);

/** The fields every object has beside what its schema describes. */
const TYPE_META = new Set(['apiVersion', 'kind', 'metadata']);

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Removes from `obj` (a whole custom resource) every field `schema` does not know, and every null its schema does
 * not allow, and returns the unknown fields' paths, sorted.
 */
export function pruneUnknownFields(obj: Json, schema: JsonSchema): string[] {
  const pruned: string[] = [];
  for (const k of Object.keys(obj)) {
    if (TYPE_META.has(k)) continue;
    if (schema.properties?.[k] === undefined && schema['x-kubernetes-preserve-unknown-fields'] !== true) {
      Reflect.deleteProperty(obj, k);
      pruned.push(k);
    }
  }
  if (isObject(obj.metadata))
    for (const k of Object.keys(obj.metadata))
      if (!OBJECT_META_FIELDS.has(k)) {
        Reflect.deleteProperty(obj.metadata, k);
        pruned.push(child('metadata', k));
      }
  pruneProperties(obj, schema, '', pruned, TYPE_META);
  return pruned.sort();
}

function prune(v: unknown, s: JsonSchema, path: string, pruned: string[]): void {
  if (Array.isArray(v)) {
    if (s.items !== undefined) v.forEach((item, i) => prune(item, s.items as JsonSchema, index(path, i), pruned));
    return;
  }
  if (!isObject(v)) return;
  const additional = s.additionalProperties;
  if (typeof additional === 'object') {
    for (const [k, item] of Object.entries(v)) prune(item, additional, child(path, k), pruned);
    return;
  }
  if (s.properties === undefined && (s['x-kubernetes-preserve-unknown-fields'] === true || additional === true)) return;
  if (s['x-kubernetes-preserve-unknown-fields'] !== true)
    for (const k of Object.keys(v))
      if (s.properties?.[k] === undefined) {
        Reflect.deleteProperty(v, k);
        pruned.push(child(path, k));
      }
  pruneProperties(v, s, path, pruned);
}

/** Recurses into the known properties of `v`, dropping nulls where they are not allowed. */
function pruneProperties(v: Json, s: JsonSchema, path: string, pruned: string[], skip?: ReadonlySet<string>): void {
  for (const [k, ps] of Object.entries(s.properties ?? {})) {
    if (!(k in v) || skip?.has(k) === true) continue;
    if (v[k] === null && ps.nullable !== true && ps.default === undefined) {
      Reflect.deleteProperty(v, k);
      continue;
    }
    prune(v[k], ps, child(path, k), pruned);
  }
}

/** Sets every absent field whose schema has a `default` to it, in `obj` (a whole custom resource) and below. */
export function applyDefaults(obj: Json, schema: JsonSchema): void {
  for (const [k, ps] of Object.entries(schema.properties ?? {})) if (!TYPE_META.has(k)) fillDefaults(obj, k, ps);
}

function fillDefaults(parent: Json | unknown[], key: string | number, s: JsonSchema): void {
  const container = parent as Record<string | number, unknown>;
  if (container[key] === undefined && s.default !== undefined && !Array.isArray(parent))
    container[key] = structuredClone(s.default);
  const v = container[key];
  if (Array.isArray(v)) {
    if (s.items !== undefined) for (let i = 0; i < v.length; i++) fillDefaults(v, i, s.items);
  } else if (isObject(v)) {
    if (typeof s.additionalProperties === 'object')
      for (const k of Object.keys(v)) fillDefaults(v, k, s.additionalProperties);
    for (const [k, ps] of Object.entries(s.properties ?? {})) fillDefaults(v, k, ps);
  }
}

/** The OpenAPI type of a JSON value, as kube-openapi names it in a type error. */
function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function hasType(v: unknown, type: NonNullable<JsonSchema['type']>): boolean {
  const t = typeOf(v);
  return t === type || (type === 'number' && t === 'integer');
}

/** The field errors of `obj` (a whole custom resource) against `schema`; apiVersion, kind and metadata are not its. */
export function validateAgainstSchema(obj: Json, schema: JsonSchema): StatusCause[] {
  const errs: StatusCause[] = [];
  for (const name of schema.required ?? []) if (obj[name] === undefined) errs.push(required(name));
  for (const [k, ps] of Object.entries(schema.properties ?? {}))
    if (obj[k] !== undefined && !TYPE_META.has(k)) validate(obj[k], ps, k, errs);
  return errs;
}

function validate(v: unknown, s: JsonSchema, path: string, errs: StatusCause[]): void {
  if (v === null) {
    if (s.nullable !== true && s.type !== undefined)
      errs.push(typeInvalid(path, 'null', `${path} in body must be of type ${s.type}: "null"`));
    return;
  }
  if (s['x-kubernetes-int-or-string'] === true) {
    if (typeof v !== 'string' && typeOf(v) !== 'integer')
      errs.push(typeInvalid(path, typeOf(v), `${path} in body must be of type integer,string: "${typeOf(v)}"`));
    return;
  }
  if (s.type !== undefined && !hasType(v, s.type)) {
    errs.push(typeInvalid(path, typeOf(v), `${path} in body must be of type ${s.type}: "${typeOf(v)}"`));
    return;
  }
  if (s.enum !== undefined && !s.enum.some((e) => e === v))
    errs.push(
      notSupported(
        path,
        typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : JSON.stringify(v),
        s.enum.map((e) => (typeof e === 'string' ? e : JSON.stringify(e))),
      ),
    );
  if (typeof v === 'string') validateString(v, s, path, errs);
  else if (typeof v === 'number') validateNumber(v, s, path, errs);
  else if (Array.isArray(v)) {
    if (s.maxItems !== undefined && v.length > s.maxItems) errs.push(tooMany(path, v.length, s.maxItems));
    if (s.minItems !== undefined && v.length < s.minItems)
      errs.push(invalid(path, v.length, `${path} in body should have at least ${s.minItems} items`));
    if (s.items !== undefined) v.forEach((item, i) => validate(item, s.items as JsonSchema, index(path, i), errs));
  } else if (isObject(v)) validateObject(v, s, path, errs);
  for (const group of [s, ...(s.allOf ?? [])]) {
    if (group.oneOf === undefined) continue;
    const valid = group.oneOf.filter((alt) => matches(v, alt)).length;
    if (valid !== 1)
      errs.push(invalid('<nil>', '', `"${path}" must validate one and only one schema (oneOf). ${found(valid)}`));
  }
}

function found(valid: number): string {
  return valid === 0 ? 'Found none valid' : `Found ${valid} valid alternatives`;
}

function validateString(v: string, s: JsonSchema, path: string, errs: StatusCause[]): void {
  // kube-openapi counts runes, not UTF-16 units.
  const length = Array.from(v).length;
  if (s.maxLength !== undefined && length > s.maxLength) errs.push(tooLong(path, s.maxLength));
  if (s.minLength !== undefined && length < s.minLength)
    errs.push(invalid(path, v, `${path} in body should be at least ${s.minLength} chars long`));
  if (s.pattern !== undefined && !patternOf(s.pattern).test(v))
    errs.push(invalid(path, v, `${path} in body should match '${s.pattern}'`));
}

const PATTERNS = new Map<string, RegExp>();

/** A schema's pattern compiled once; Go's RE2 syntax, read as a Unicode-aware JavaScript expression. */
function patternOf(pattern: string): RegExp {
  let re = PATTERNS.get(pattern);
  if (re === undefined) {
    re = new RegExp(pattern, 'u');
    PATTERNS.set(pattern, re);
  }
  return re;
}

function validateNumber(v: number, s: JsonSchema, path: string, errs: StatusCause[]): void {
  if (s.maximum !== undefined && (s.exclusiveMaximum === true ? v >= s.maximum : v > s.maximum))
    errs.push(
      invalid(
        path,
        v,
        `${path} in body should be less than ${s.exclusiveMaximum === true ? '' : 'or equal to '}${s.maximum}`,
      ),
    );
  if (s.minimum !== undefined && (s.exclusiveMinimum === true ? v <= s.minimum : v < s.minimum))
    errs.push(
      invalid(
        path,
        v,
        `${path} in body should be greater than ${s.exclusiveMinimum === true ? '' : 'or equal to '}${s.minimum}`,
      ),
    );
}

function validateObject(v: Json, s: JsonSchema, path: string, errs: StatusCause[]): void {
  for (const name of s.required ?? []) if (v[name] === undefined) errs.push(required(child(path, name)));
  const count = Object.keys(v).length;
  if (s.maxProperties !== undefined && count > s.maxProperties) errs.push(tooMany(path, count, s.maxProperties));
  if (s.minProperties !== undefined && count < s.minProperties)
    errs.push(invalid(path, count, `${path} in body should have at least ${s.minProperties} properties`));
  for (const [k, item] of Object.entries(v)) {
    const ps = s.properties?.[k] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined);
    if (ps !== undefined) validate(item, ps, child(path, k), errs);
  }
}

/** Whether `v` satisfies `s` (for oneOf, anyOf and not, which report no field errors of their own). */
function matches(v: unknown, s: JsonSchema): boolean {
  if (s.not !== undefined && matches(v, s.not)) return false;
  if (s.anyOf !== undefined && !s.anyOf.some((alt) => matches(v, alt))) return false;
  const errs: StatusCause[] = [];
  validate(v, { ...s, not: undefined, anyOf: undefined }, 'x', errs);
  return errs.length === 0;
}
