import { randomInt } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { StatusCause } from '../api-error.js';
import { ApiError } from '../api-error.js';
import type { KindInfo } from '../kind-info.js';
import type { KubeObject, ObjectMeta } from '../kube-object.js';
import {
  FIELD_IMMUTABLE,
  child,
  forbidden,
  goStringSlice,
  index,
  invalid,
  jsonValue,
  required,
  tooLong,
} from './field-errors.js';
import type { BadValue } from './field-errors.js';
import {
  NameRule,
  isDns1123Subdomain,
  isLabelValue,
  isQualifiedName,
  nameIsDns1035Label,
  nameIsDnsLabel,
  nameIsDnsSubdomain,
  nameIsPathSegment,
} from './formats.js';
import { asArray, asNumber, asObject, asString } from './json-fields.js';

/**
 * Generic metadata validation for every stored kind, after k8s.io/apimachinery `pkg/api/validation/objectmeta.go`
 * (`ValidateObjectMetaAccessor`, `ValidateObjectMetaAccessorUpdate`) with the name rules of
 * `pkg/apis/core/validation/validation.go` and `pkg/api/validation/generic.go`, and the request-namespace rule of
 * k8s.io/apiserver `pkg/registry/rest/create.go` (`EnsureObjectNamespaceMatchesRequestNamespace`).
 *
 * Order of a write, as k8s.io/apiserver's `rest.BeforeCreate`/`BeforeUpdate` run it: `decodeError` (values that
 * would not decode into Go types, such as a label value `true`, are a 400), {@link ensureRequestNamespace}
 * (which also gives a body without `metadata` an empty one), the strategy's `prepareForCreate` or
 * `prepareForUpdate`, name generation, then {@link validateObjectMeta} with `validate` on create, or
 * {@link validateObjectMetaUpdate} with `validateUpdate` on update (which includes the create checks of the new
 * object); a non-empty list is `invalid(...)`, a 422.
 */

/** Annotations may total 256 KiB, keys and values together (`TotalAnnotationSizeLimitB`). */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

/** Finalizers built-in kinds accept without a domain prefix (core `helper.IsStandardFinalizerName`). */
const STANDARD_FINALIZERS = new Set(['kubernetes', 'orphan', 'foregroundDeletion']);

/** Groups served by the API server itself; every other group is a CustomResourceDefinition's upstream. */
const BUILT_IN_GROUPS = new Set([
  '',
  'apps',
  'batch',
  'discovery.k8s.io',
  'authentication.k8s.io',
  'authorization.k8s.io',
  'rbac.authorization.k8s.io',
  'policy',
  'autoscaling',
]);

export function isBuiltIn(kind: KindInfo): boolean {
  return BUILT_IN_GROUPS.has(kind.group);
}

/**
 * The name rule of a kind: namespaces are DNS-1123 labels, services DNS-1035 labels, RBAC's roles and bindings
 * path segments (kubernetes `pkg/apis/rbac/validation` `ValidateRBACName`), most kinds DNS-1123 subdomains.
 * Core/v1 Events have none: upstream validates their metadata only for events.k8s.io (`ValidateEventCreate`).
 */
export function nameRuleOf(kind: KindInfo): NameRule | undefined {
  if (kind.group === 'rbac.authorization.k8s.io') return nameIsPathSegment;
  if (kind.group === '' && kind.kind === 'Namespace') return nameIsDnsLabel;
  if (kind.group === '' && kind.kind === 'Service') return nameIsDns1035Label;
  if (kind.group === '' && kind.kind === 'Event') return undefined;
  return nameIsDnsSubdomain;
}

/**
 * Makes the object's namespace agree with the request's: the URL namespace fills an empty one, cluster-scoped
 * kinds have theirs cleared, and a conflicting one is refused with upstream's `400 BadRequest`.
 * `urlNamespace` is the namespace in the request path (undefined for cluster-scoped paths).
 */
export function ensureRequestNamespace(kind: KindInfo, obj: KubeObject, urlNamespace: string | undefined): void {
  const expected = kind.namespaced ? (urlNamespace ?? '') : '';
  obj.metadata = metaOf(obj);
  const actual = asString(obj.metadata.namespace) ?? '';
  if (actual === expected) return;
  if (actual === '') {
    obj.metadata.namespace = expected;
    return;
  }
  if (expected === '') {
    delete obj.metadata.namespace;
    return;
  }
  throw new ApiError(
    'BadRequest',
    'the namespace of the provided object does not match the namespace sent on the request',
  );
}

/** Generated names end in 5 random characters and stay within a 63-character label (`names.SimpleNameGenerator`). */
const GENERATED_SUFFIX_LENGTH = 5;
const MAX_GENERATED_BASE_LENGTH = 63 - GENERATED_SUFFIX_LENGTH;
/** The alphabet of generated suffixes: no vowels nor look-alike digits, so no words (apimachinery `util/rand`). */
const SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** A name for `generateName`: the base, cut to 58 characters, and a random 5-character suffix. */
export function generatedName(base: string): string {
  let suffix = '';
  for (let i = 0; i < GENERATED_SUFFIX_LENGTH; i++) suffix += SUFFIX_ALPHABET.charAt(randomInt(SUFFIX_ALPHABET.length));
  return `${base.slice(0, MAX_GENERATED_BASE_LENGTH)}${suffix}`;
}

/** Metadata checks on create. Expects `generateName` to have been turned into `name` already. */
export function validateObjectMeta(kind: KindInfo, obj: KubeObject): StatusCause[] {
  if (kind.review) return [];
  const meta = metaOf(obj);
  const rule = nameRuleOf(kind);
  const errs: StatusCause[] = [];
  const generateName = asString(meta.generateName) ?? '';
  if (rule === undefined) {
    if ((asString(meta.name) ?? '') === '') errs.push(required('metadata.name', 'name or generateName is required'));
    return [...errs, ...validateEventNamespace(meta.namespace)];
  }
  if (generateName !== '')
    for (const m of rule(generateName, true)) errs.push(invalid('metadata.generateName', generateName, m));
  const name = asString(meta.name) ?? '';
  if (name === '') errs.push(required('metadata.name', 'name or generateName is required'));
  else for (const m of rule(name, false)) errs.push(invalid('metadata.name', name, m));
  if (kind.namespaced) {
    const ns = asString(meta.namespace) ?? '';
    if (ns === '') errs.push(required('metadata.namespace'));
    else for (const m of nameIsDnsLabel(ns, false)) errs.push(invalid('metadata.namespace', ns, m));
  } else if ((asString(meta.namespace) ?? '') !== '') {
    errs.push(forbidden('metadata.namespace', 'not allowed on this type'));
  }
  const generation = asNumber(meta.generation) ?? 0;
  if (generation < 0) errs.push(invalid('metadata.generation', generation, 'must be greater than or equal to 0'));
  return [...errs, ...validateMetaCommon(kind, obj)];
}

/** Metadata checks on update: identity fields are immutable, and the new labels and so on are checked again. */
export function validateObjectMetaUpdate(kind: KindInfo, obj: KubeObject, old: KubeObject): StatusCause[] {
  if (kind.review) return [];
  const now = metaOf(obj);
  const before = metaOf(old);
  const errs: StatusCause[] = [];
  if (before.deletionTimestamp !== undefined) {
    const oldFinalizers = new Set(stringsOf(before.finalizers));
    const added = [...new Set(stringsOf(now.finalizers).filter((f) => !oldFinalizers.has(f)))].sort();
    if (added.length > 0)
      errs.push(
        forbidden(
          'metadata.finalizers',
          `no new finalizers can be added if the object is being deleted, found new finalizers ${goStringSlice(added).go}`,
        ),
      );
  }
  const rv = asString(now.resourceVersion) ?? '';
  if (rv === '') errs.push(invalid('metadata.resourceVersion', '', 'must be specified for an update'));
  const generation = asNumber(now.generation) ?? 0;
  if (generation < (asNumber(before.generation) ?? 0))
    errs.push(invalid('metadata.generation', generation, 'must not be decremented'));
  for (const f of ['name', 'namespace', 'uid'] as const)
    errs.push(...immutable(`metadata.${f}`, now[f] ?? '', before[f] ?? ''));
  errs.push(
    ...immutable('metadata.creationTimestamp', goTime(now.creationTimestamp), goTime(before.creationTimestamp)),
  );
  errs.push(
    ...immutable(
      'metadata.deletionTimestamp',
      goTime(now.deletionTimestamp, null),
      goTime(before.deletionTimestamp, null),
    ),
  );
  errs.push(
    ...immutable(
      'metadata.deletionGracePeriodSeconds',
      now.deletionGracePeriodSeconds ?? null,
      before.deletionGracePeriodSeconds ?? null,
    ),
  );
  return [...errs, ...validateMetaCommon(kind, obj)];
}

/** `field is immutable` when `now` and `before` differ (apimachinery `ValidateImmutableField`). */
export function immutable(field: string, now: unknown, before: unknown, shown?: BadValue): StatusCause[] {
  if (isDeepStrictEqual(now, before)) return [];
  return [invalid(field, shown ?? toBadValue(now), FIELD_IMMUTABLE)];
}

function toBadValue(v: unknown): BadValue {
  if (v === null || v === undefined || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')
    return v;
  if (typeof v === 'object' && 'go' in v) return v as BadValue;
  return jsonValue(v);
}

/** A timestamp as Go's `time.Time.String()` prints a UTC time: `2024-05-01 10:00:00 +0000 UTC`. */
function goTime(v: unknown, absent: BadValue = { go: '0001-01-01 00:00:00 +0000 UTC' }): BadValue {
  const s = asString(v);
  if (s === undefined) return absent;
  const d = new Date(s);
  if (Number.isNaN(d.getTime())) return s;
  return { go: `${d.toISOString().slice(0, 19).replace('T', ' ')} +0000 UTC` };
}

/** The object's metadata, or none for a body that has no `metadata` object (its fields are then missing). */
function metaOf(obj: KubeObject): ObjectMeta {
  return asObject(obj.metadata) ?? {};
}

function stringsOf(v: unknown): string[] {
  return (asArray(v) ?? []).filter((x): x is string => typeof x === 'string');
}

function validateMetaCommon(kind: KindInfo, obj: KubeObject): StatusCause[] {
  const meta = metaOf(obj);
  return [
    ...validateLabels(asObject(meta.labels), 'metadata.labels'),
    ...validateAnnotations(asObject(meta.annotations), 'metadata.annotations'),
    ...validateOwnerReferences(asArray(meta.ownerReferences) ?? [], 'metadata.ownerReferences'),
    ...validateFinalizers(kind, stringsOf(meta.finalizers), 'metadata.finalizers'),
  ];
}

/** Label keys are qualified names and values label values; errors name the map, not the key, as upstream does. */
export function validateLabels(labels: Record<string, unknown> | undefined, path: string): StatusCause[] {
  const errs: StatusCause[] = [];
  for (const [k, v] of Object.entries(labels ?? {})) {
    for (const m of isQualifiedName(k)) errs.push(invalid(path, k, m));
    if (typeof v === 'string') for (const m of isLabelValue(v)) errs.push(invalid(path, v, m));
  }
  return errs;
}

export function validateAnnotations(annotations: Record<string, unknown> | undefined, path: string): StatusCause[] {
  const errs: StatusCause[] = [];
  let size = 0;
  for (const [k, v] of Object.entries(annotations ?? {})) {
    for (const m of isQualifiedName(k.toLowerCase())) errs.push(invalid(path, k, m));
    size += Buffer.byteLength(k) + (typeof v === 'string' ? Buffer.byteLength(v) : 0);
  }
  if (size > TOTAL_ANNOTATION_SIZE_LIMIT) errs.push(tooLong(path, TOTAL_ANNOTATION_SIZE_LIMIT));
  return errs;
}

/** `schema.FromAPIVersionAndKind`: an apiVersion with more than one '/' parses to no group and version. */
function groupVersionOf(apiVersion: string): { group: string; version: string } {
  const parts = apiVersion.split('/');
  if (parts.length === 1) return { group: '', version: parts[0]! };
  if (parts.length === 2) return { group: parts[0]!, version: parts[1]! };
  return { group: '', version: '' };
}

function validateOwnerReferences(refs: unknown[], path: string): StatusCause[] {
  const errs: StatusCause[] = [];
  let firstController = '';
  for (const entry of refs) {
    const ref = asObject(entry) ?? {};
    const apiVersion = asString(ref.apiVersion) ?? '';
    const kind = asString(ref.kind) ?? '';
    const name = asString(ref.name) ?? '';
    const uid = asString(ref.uid) ?? '';
    const gv = groupVersionOf(apiVersion);
    if (gv.version === '') errs.push(invalid(child(path, 'apiVersion'), apiVersion, 'version must not be empty'));
    if (kind === '') errs.push(invalid(child(path, 'kind'), kind, 'must not be empty'));
    if (name === '') errs.push(invalid(child(path, 'name'), name, 'must not be empty'));
    if (uid === '') errs.push(invalid(child(path, 'uid'), uid, 'must not be empty'));
    if (gv.group === '' && gv.version === 'v1' && kind === 'Event')
      errs.push(invalid(path, jsonValue(ref), '/v1, Kind=Event is disallowed from being an owner'));
    if (ref.controller === true) {
      const current = `${kind}/${name}`;
      if (firstController === '') firstController = current;
      else
        errs.push(
          invalid(
            path,
            jsonValue(refs),
            `Only one reference can have Controller set to true. Found "true" in references for ${firstController} and ${current}`,
          ),
        );
    }
  }
  return errs;
}

function validateFinalizers(kind: KindInfo, finalizers: string[], path: string): StatusCause[] {
  const errs: StatusCause[] = [];
  for (const f of finalizers) for (const m of isQualifiedName(f)) errs.push(invalid(path, f, m));
  if (finalizers.includes('orphan') && finalizers.includes('foregroundDeletion'))
    errs.push(invalid(path, goStringSlice(finalizers), 'finalizer orphan and foregroundDeletion cannot be both set'));
  if (isBuiltIn(kind)) finalizers.forEach((f, i) => errs.push(...validateKubeFinalizerName(f, index(path, i))));
  return errs;
}

/** Built-in kinds take unprefixed finalizer names only from the standard set (core `validateKubeFinalizerName`). */
export function validateKubeFinalizerName(name: string, path: string): StatusCause[] {
  if (name.includes('/') || STANDARD_FINALIZERS.has(name)) return [];
  return [invalid(path, name, 'name is neither a standard finalizer name nor is it fully qualified')];
}

/** Core/v1 Events check only their namespace's form (`legacyValidateEvent`). */
function validateEventNamespace(ns: unknown): StatusCause[] {
  const namespace = asString(ns) ?? '';
  return isDns1123Subdomain(namespace).map((m) => invalid('namespace', namespace, m));
}
