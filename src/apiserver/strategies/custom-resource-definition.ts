import type { StatusCause } from '../api-error.js';
import type { KubeObject } from '../kube-object.js';
import { child, duplicate, index, invalid, notSupported, required } from '../validation/field-errors.js';
import { isDns1035Label, isDns1123Subdomain } from '../validation/formats.js';
import { asArray, asObject, asString, type JsonObject } from '../validation/json-fields.js';
import { nextGeneration } from './generation.js';
import type { Strategy } from './strategy.js';

/**
 * CustomResourceDefinitions (apiextensions.k8s.io/v1), after k8s.io/apiextensions-apiserver
 * `pkg/registry/customresourcedefinition/strategy.go` and `pkg/apis/apiextensions/validation`: names defaulted
 * (singular, listKind) and checked (the object is named `<plural>.<group>`, a group with a dot, DNS-1035 names),
 * scope, exactly one storage version, and a schema per version whose root and object fields have a type (a basic
 * structural check). A new CRD's status holds only its storage version; the conditions and accepted names are the
 * controller's (`custom-resource-definition-controller.ts`), as upstream's naming and establishing controllers'.
 */

const SCOPES = ['Cluster', 'Namespaced'];
const SCHEMA_TYPES = ['array', 'boolean', 'integer', 'number', 'object', 'string'];

export function specOf(o: KubeObject): JsonObject {
  return asObject(o.spec) ?? {};
}

export function namesOf(o: KubeObject): JsonObject {
  return asObject(specOf(o).names) ?? {};
}

function defaultNames(o: KubeObject): void {
  const names = namesOf(o);
  const kind = asString(names.kind);
  if (kind === undefined || asObject(specOf(o).names) === undefined) return;
  if (asString(names.singular) === undefined || names.singular === '') names.singular = kind.toLowerCase();
  if (asString(names.listKind) === undefined || names.listKind === '') names.listKind = `${kind}List`;
}

function storageVersion(o: KubeObject): string | undefined {
  const v = asArray(specOf(o).versions)
    ?.map(asObject)
    .find((x) => x?.storage === true);
  return asString(v?.name);
}

function validateNames(o: KubeObject): StatusCause[] {
  const errs: StatusCause[] = [];
  const names = namesOf(o);
  const path = 'spec.names';
  for (const field of ['plural', 'singular', 'kind', 'listKind']) {
    const v = asString(names[field]);
    if (v === undefined || v === '') {
      errs.push(required(child(path, field)));
      continue;
    }
    const dns = field === 'kind' || field === 'listKind' ? isDns1035Label(v.toLowerCase()) : isDns1035Label(v);
    if (dns.length > 0) errs.push(invalid(child(path, field), v, dns.join(',')));
  }
  (asArray(names.shortNames) ?? []).forEach((s, i) => {
    const dns = isDns1035Label(String(s));
    if (dns.length > 0) errs.push(invalid(index(child(path, 'shortNames'), i), String(s), dns.join(',')));
  });
  return errs;
}

/** The basic structural-schema rules: a type at the root and on every field that has properties. */
function validateSchema(s: unknown, path: string, root: boolean, errs: StatusCause[]): void {
  const schema = asObject(s);
  if (schema === undefined) return;
  const type = asString(schema.type);
  const open = schema['x-kubernetes-preserve-unknown-fields'] === true || schema['x-kubernetes-int-or-string'] === true;
  if (type === undefined && root) errs.push(required(child(path, 'type'), 'must not be empty at the root'));
  else if (type !== undefined && !SCHEMA_TYPES.includes(type))
    errs.push(notSupported(child(path, 'type'), type, SCHEMA_TYPES));
  else if (root && type !== 'object') errs.push(invalid(child(path, 'type'), type, 'must be object at the root'));
  else if (type === undefined && !open && asObject(schema.properties) !== undefined)
    errs.push(required(child(path, 'type'), 'must not be empty for specified object fields'));
  for (const [k, v] of Object.entries(asObject(schema.properties) ?? {}))
    validateSchema(v, `${child(path, 'properties')}[${k}]`, false, errs);
  if (schema.items !== undefined) validateSchema(schema.items, child(path, 'items'), false, errs);
  if (asObject(schema.additionalProperties) !== undefined)
    validateSchema(schema.additionalProperties, child(path, 'additionalProperties'), false, errs);
}

function validateVersions(o: KubeObject): StatusCause[] {
  const errs: StatusCause[] = [];
  const versions = asArray(specOf(o).versions);
  if (versions === undefined || versions.length === 0)
    return [required('spec.versions', 'must have exactly one version marked as storage version')];
  const storage = versions.filter((v) => asObject(v)?.storage === true).length;
  if (storage !== 1)
    errs.push(
      invalid(
        'spec.versions',
        { go: `[]apiextensions.CustomResourceDefinitionVersion{...}` },
        'must have exactly one version marked as storage version',
      ),
    );
  const seen = new Set<string>();
  versions.forEach((raw, i) => {
    const v = asObject(raw) ?? {};
    const path = index('spec.versions', i);
    const name = asString(v.name) ?? '';
    if (name === '') errs.push(required(child(path, 'name')));
    else {
      const dns = isDns1035Label(name);
      if (dns.length > 0) errs.push(invalid(child(path, 'name'), name, dns.join(',')));
      if (seen.has(name)) errs.push(duplicate(child(path, 'name'), name));
      seen.add(name);
    }
    const schema = asObject(asObject(v.schema)?.openAPIV3Schema);
    const schemaPath = child(child(path, 'schema'), 'openAPIV3Schema');
    if (schema === undefined) errs.push(required(schemaPath, 'schemas are required'));
    else validateSchema(schema, schemaPath, true, errs);
  });
  return errs;
}

function validateCustomResourceDefinition(o: KubeObject): StatusCause[] {
  const errs: StatusCause[] = [];
  const spec = specOf(o);
  const group = asString(spec.group) ?? '';
  if (group === '') errs.push(required('spec.group'));
  else {
    const dns = isDns1123Subdomain(group);
    if (dns.length > 0) errs.push(invalid('spec.group', group, dns.join(',')));
    if (!group.includes('.')) errs.push(invalid('spec.group', group, 'should be a domain with at least one dot'));
  }
  const scope = asString(spec.scope) ?? '';
  if (scope === '') errs.push(required('spec.scope'));
  else if (!SCOPES.includes(scope)) errs.push(notSupported('spec.scope', scope, SCOPES));
  errs.push(...validateNames(o), ...validateVersions(o));
  const plural = asString(namesOf(o).plural) ?? '';
  const name = o.metadata.name ?? '';
  if (name !== `${plural}.${group}`)
    errs.unshift(invalid('metadata.name', name, 'must be spec.names.plural+"."+spec.group'));
  return errs;
}

function tracked(o: KubeObject): unknown {
  return { ...o, metadata: undefined, status: undefined };
}

export const customResourceDefinitionStrategy: Strategy = {
  prepareForCreate(obj) {
    defaultNames(obj);
    obj.metadata.generation = 1;
    const storage = storageVersion(obj);
    obj.status = { storedVersions: storage === undefined ? [] : [storage] };
  },
  prepareForUpdate(obj, old) {
    defaultNames(obj);
    nextGeneration(obj, old, tracked);
    const status = asObject(obj.status) ?? {};
    const stored = (asArray(status.storedVersions) ?? []).filter((v) => typeof v === 'string');
    const storage = storageVersion(obj);
    if (storage !== undefined && !stored.includes(storage))
      obj.status = { ...status, storedVersions: [...stored, storage] };
  },
  validate: validateCustomResourceDefinition,
  validateUpdate(obj, old) {
    const errs = validateCustomResourceDefinition(obj);
    if (asString(specOf(obj).group) !== asString(specOf(old).group))
      errs.push(invalid('spec.group', asString(specOf(obj).group) ?? '', 'field is immutable'));
    if (asString(specOf(obj).scope) !== asString(specOf(old).scope))
      errs.push(invalid('spec.scope', asString(specOf(obj).scope) ?? '', 'field is immutable'));
    return errs;
  },
};
