import { ApiError } from '../api-error.js';
import type { KindInfo } from '../kind-info.js';
import type { KubeObject } from '../kube-object.js';
import { asArray, asObject } from './json-fields.js';
import { isBuiltIn } from './object-meta.js';

/**
 * What the real API server refuses before validation because the body does not decode into its Go types
 * (k8s.io/apimachinery `pkg/runtime/serializer/json`, served as `400 BadRequest` by k8s.io/apiserver
 * `pkg/endpoints/handlers/create.go`): a label value `true` or `1` from YAML, a finalizer that is not a string,
 * Secret data that is not base64. The message is the one the real server gives: `Pod in version "v1" cannot be
 * handled as a Pod: json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string`.
 * Checked by hand because only the fields a client commonly gets wrong are typed here; the rest of an object
 * stays untyped JSON, as a custom resource without a schema would.
 */
export function decodeError(kind: KindInfo, obj: KubeObject): ApiError | undefined {
  const problem = firstProblem(kind, obj);
  if (problem === undefined) return undefined;
  return new ApiError(
    'BadRequest',
    `${kind.kind} in version "${kind.version}" cannot be handled as a ${kind.kind}: ${problem}`,
  );
}

/** Go's name for a JSON value's type in an `UnmarshalTypeError`. */
function jsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'object') return 'object';
  if (typeof v === 'boolean') return 'bool';
  return typeof v;
}

function mismatch(v: unknown, struct: string, field: string, goType: string): string {
  return `json: cannot unmarshal ${jsonType(v)} into Go struct field ${struct}.${field} of type ${goType}`;
}

/** Go decodes JSON null into anything, so only present, non-null values of the wrong type are refused. */
function wrong(v: unknown, want: 'string' | 'number' | 'boolean' | 'object' | 'array'): boolean {
  if (v === undefined || v === null) return false;
  if (want === 'array') return !Array.isArray(v);
  if (want === 'object') return asObject(v) === undefined;
  return typeof v !== want;
}

const META_STRINGS = [
  'name',
  'generateName',
  'namespace',
  'uid',
  'resourceVersion',
  'creationTimestamp',
  'deletionTimestamp',
];
const OWNER_REFERENCE_STRINGS = ['apiVersion', 'kind', 'name', 'uid'];

function firstProblem(kind: KindInfo, obj: KubeObject): string | undefined {
  const meta: unknown = obj.metadata;
  if (wrong(meta, 'object')) return mismatch(meta, kind.kind, 'metadata', 'v1.ObjectMeta');
  const m = asObject(meta) ?? {};
  for (const f of META_STRINGS)
    if (wrong(m[f], 'string'))
      return mismatch(m[f], 'ObjectMeta', `metadata.${f}`, f.endsWith('Timestamp') ? 'v1.Time' : 'string');
  if (wrong(m.generation, 'number')) return mismatch(m.generation, 'ObjectMeta', 'metadata.generation', 'int64');
  for (const f of ['labels', 'annotations']) {
    const problem = stringMapProblem(m[f], 'ObjectMeta', `metadata.${f}`);
    if (problem !== undefined) return problem;
  }
  const finalizers = stringListProblem(m.finalizers, 'ObjectMeta', 'metadata.finalizers');
  if (finalizers !== undefined) return finalizers;
  if (wrong(m.ownerReferences, 'array'))
    return mismatch(m.ownerReferences, 'ObjectMeta', 'metadata.ownerReferences', '[]v1.OwnerReference');
  for (const entry of asArray(m.ownerReferences) ?? []) {
    if (wrong(entry, 'object')) return mismatch(entry, 'ObjectMeta', 'metadata.ownerReferences', 'v1.OwnerReference');
    const ref = asObject(entry) ?? {};
    for (const f of OWNER_REFERENCE_STRINGS)
      if (wrong(ref[f], 'string')) return mismatch(ref[f], 'OwnerReference', `metadata.ownerReferences.${f}`, 'string');
    for (const f of ['controller', 'blockOwnerDeletion'])
      if (wrong(ref[f], 'boolean')) return mismatch(ref[f], 'OwnerReference', `metadata.ownerReferences.${f}`, 'bool');
  }
  if (isBuiltIn(kind) && !kind.review && wrong(obj.spec, 'object'))
    return mismatch(obj.spec, kind.kind, 'spec', `${kind.version}.${kind.kind}Spec`);
  if (kind.group === '' && kind.kind === 'Secret') return secretProblem(obj);
  if (kind.group === 'rbac.authorization.k8s.io') return rbacProblem(kind.kind, obj);
  if (kind.group === '' && kind.kind === 'ConfigMap')
    return (
      stringMapProblem(obj.data, 'ConfigMap', 'data') ?? bytesMapProblem(obj.binaryData, 'ConfigMap', 'binaryData')
    );
  return undefined;
}

function stringMapProblem(v: unknown, struct: string, field: string): string | undefined {
  if (wrong(v, 'object')) return mismatch(v, struct, field, 'map[string]string');
  for (const value of Object.values(asObject(v) ?? {}))
    if (wrong(value, 'string')) return mismatch(value, struct, field, 'string');
  return undefined;
}

function stringListProblem(v: unknown, struct: string, field: string): string | undefined {
  if (wrong(v, 'array')) return mismatch(v, struct, field, '[]string');
  for (const value of asArray(v) ?? []) if (wrong(value, 'string')) return mismatch(value, struct, field, 'string');
  return undefined;
}

function bytesMapProblem(v: unknown, struct: string, field: string): string | undefined {
  if (wrong(v, 'object')) return mismatch(v, struct, field, 'map[string][]uint8');
  for (const value of Object.values(asObject(v) ?? {})) {
    if (wrong(value, 'string')) return mismatch(value, struct, field, '[]uint8');
    if (typeof value === 'string') {
      const at = base64ErrorOffset(value);
      if (at !== undefined) return `illegal base64 data at input byte ${at}`;
    }
  }
  return undefined;
}

function secretProblem(obj: KubeObject): string | undefined {
  return (
    bytesMapProblem(obj.data, 'Secret', 'data') ??
    stringMapProblem(obj.stringData, 'Secret', 'stringData') ??
    (wrong(obj.type, 'string') ? mismatch(obj.type, 'Secret', 'type', 'v1.SecretType') : undefined)
  );
}

/** A list of objects whose fields are all strings or all string lists (RBAC's rules and subjects). */
function structListProblem(
  v: unknown,
  owner: string,
  field: string,
  struct: string,
  fields: readonly string[],
  fieldType: 'string' | '[]string',
): string | undefined {
  if (wrong(v, 'array')) return mismatch(v, owner, field, `[]v1.${struct}`);
  for (const entry of asArray(v) ?? []) {
    if (wrong(entry, 'object')) return mismatch(entry, owner, field, `v1.${struct}`);
    const o = asObject(entry) ?? {};
    for (const f of fields) {
      const stringProblem = wrong(o[f], 'string') ? mismatch(o[f], struct, `${field}.${f}`, 'string') : undefined;
      const problem = fieldType === 'string' ? stringProblem : stringListProblem(o[f], struct, `${field}.${f}`);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

const POLICY_RULE_FIELDS = ['verbs', 'apiGroups', 'resources', 'resourceNames', 'nonResourceURLs'];
const SUBJECT_FIELDS = ['kind', 'apiGroup', 'name', 'namespace'];

/** Roles' rules and aggregation rule, bindings' subjects and roleRef: what RBAC's evaluation reads. */
function rbacProblem(kind: string, obj: KubeObject): string | undefined {
  const rules = structListProblem(obj.rules, kind, 'rules', 'PolicyRule', POLICY_RULE_FIELDS, '[]string');
  if (rules !== undefined) return rules;
  const aggregation: unknown = obj.aggregationRule;
  if (wrong(aggregation, 'object')) return mismatch(aggregation, kind, 'aggregationRule', 'v1.AggregationRule');
  const selectors = asObject(aggregation)?.clusterRoleSelectors;
  const at = 'aggregationRule.clusterRoleSelectors';
  if (wrong(selectors, 'array')) return mismatch(selectors, 'AggregationRule', at, '[]v1.LabelSelector');
  for (const s of asArray(selectors) ?? []) {
    if (wrong(s, 'object')) return mismatch(s, 'AggregationRule', at, 'v1.LabelSelector');
    const labels = stringMapProblem(asObject(s)?.matchLabels, 'LabelSelector', `${at}.matchLabels`);
    if (labels !== undefined) return labels;
  }
  const subjects = structListProblem(obj.subjects, kind, 'subjects', 'Subject', SUBJECT_FIELDS, 'string');
  if (subjects !== undefined) return subjects;
  const ref: unknown = obj.roleRef;
  if (wrong(ref, 'object')) return mismatch(ref, kind, 'roleRef', 'v1.RoleRef');
  for (const f of ['apiGroup', 'kind', 'name'])
    if (wrong(asObject(ref)?.[f], 'string')) return mismatch(asObject(ref)?.[f], 'RoleRef', `roleRef.${f}`, 'string');
  return undefined;
}

const BASE64_ALPHABET = /[A-Za-z0-9+/]/;

/**
 * Where Go's `base64.StdEncoding` stops on `s` (the offset its `CorruptInputError` reports), or undefined when
 * `s` is valid padded standard base64. Go skips CR and LF; a short final quantum is reported at its start.
 */
export function base64ErrorOffset(s: string): number | undefined {
  let quantumStart = 0;
  let inQuantum = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\r' || c === '\n') continue;
    if (inQuantum === 0) quantumStart = i;
    if (c === '=') {
      if (inQuantum < 2) return i;
      if (inQuantum === 2) {
        let j = i + 1;
        while (j < s.length && (s[j] === '\r' || s[j] === '\n')) j++;
        if (j >= s.length || s[j] !== '=') return j >= s.length ? quantumStart : j;
        i = j;
      }
      let k = i + 1;
      while (k < s.length && (s[k] === '\r' || s[k] === '\n')) k++;
      return k < s.length ? k : undefined;
    }
    if (!BASE64_ALPHABET.test(c)) return i;
    inQuantum = (inQuantum + 1) % 4;
  }
  return inQuantum === 0 ? undefined : quantumStart;
}
