#!/usr/bin/env node
// Writes src/apiserver/schema/istio-crds.gen.ts: the CustomResourceDefinitions of Istio's config kinds (names,
// versions, printer columns, labels, and the structural openAPIV3Schema of spec and status), made from istio/api's
// .proto files as Istio's own CRD generator makes them (istio/tools cmd/protoc-gen-crd, whose output is istio/api
// kubernetes/customresourcedefinitions.gen.yaml and istio manifests/charts/base/files/crd-all.gen.yaml):
//
// - a message tagged `+cue-gen:<Kind>:...` in its leading comment is a CRD: groupName, versions (the first is the
//   storage version, or `version` + `storageVersion`), resource (plural, shortNames, categories), labels,
//   annotations, printerColumn, subresource:status (status is istio.meta.v1alpha1.IstioStatus, unknown fields kept),
//   spec:required;
// - fields map to schema types by proto type (32-bit ints `format: int32`, unsigned ones `minimum: 0`, enums as
//   their value names, maps as `additionalProperties`, well-known wrappers `nullable`, Struct/Any/Value keeping
//   unknown fields, Duration a string), `(google.api.field_behavior) = REQUIRED` to `required`, each oneof to
//   `oneOf: [not anyOf [required a, required b], required a, required b]` (at most one set);
// - `+kubebuilder:validation:*`, `+protoc-gen-crd:{map,list}-value-validation:*`, `+listType`/`+listMapKey` and
//   `+kubebuilder:altName` markers in field and message comments add the limits they name; CEL rules
//   (XValidation) are kept, with the generator's macros (`oneof`, `default`, `index`) expanded into plain CEL;
// - a description is the first sentence of the comment, the spec's the file's `$description` and `$location`.
//
// Usage: node scripts/gen-istio-schemas.mjs <istio/api checkout>
// (buf, from devDependencies, compiles the protos; the checkout's commit is recorded in the output.)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromBinary, isFieldSet } from '@bufbuild/protobuf';
import { FieldDescriptorProtoSchema, FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import * as prettier from 'prettier';

const OUT = 'src/apiserver/schema/istio-crds.gen.ts';
const PROTO_DIRS = ['security', 'networking', 'extensions', 'telemetry', 'type', 'meta', 'analysis'];
const FIELD_BEHAVIOR = 1052;
const REQUIRED_BEHAVIOR = 2;
const STATUS_MESSAGE = 'istio.meta.v1alpha1.IstioStatus';
const MAX_UINT32 = 4294967295;

// FieldDescriptorProto.Type and Label values.
const T = { double: 1, float: 2, int64: 3, uint64: 4, int32: 5, fixed64: 6, fixed32: 7, bool: 8, string: 9 };
const T_MESSAGE = 11;
const T_BYTES = 12;
const T_UINT32 = 13;
const T_ENUM = 14;
const T_SFIXED32 = 15;
const T_SFIXED64 = 16;
const T_SINT32 = 17;
const T_SINT64 = 18;
const LABEL_REPEATED = 3;

/** Schemas of well-known types, as Istio's generator fixes them. */
const WELL_KNOWN = {
  'google.protobuf.Struct': { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
  'google.protobuf.Any': { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
  'google.protobuf.Value': { 'x-kubernetes-preserve-unknown-fields': true },
  'google.protobuf.ListValue': { items: { type: 'object' } },
  'google.protobuf.BoolValue': { type: 'boolean', nullable: true },
  'google.protobuf.StringValue': { type: 'string', nullable: true },
  'google.protobuf.DoubleValue': { type: 'number', format: 'double', nullable: true },
  'google.protobuf.FloatValue': { type: 'number', format: 'double', nullable: true },
  'google.protobuf.Int32Value': { type: 'integer', format: 'int32', nullable: true },
  'google.protobuf.Int64Value': { type: 'integer', format: 'int64', nullable: true },
  'google.protobuf.UInt32Value': { type: 'integer', minimum: 0, maximum: MAX_UINT32, nullable: true },
  'google.protobuf.UInt64Value': { type: 'integer', minimum: 0, nullable: true },
  'google.protobuf.Duration': {
    type: 'string',
    'x-kubernetes-validations': [
      { rule: "duration(self) >= duration('1ms')", message: 'must be a valid duration greater than 1ms' },
    ],
  },
  'google.protobuf.Empty': { type: 'object', maxProperties: 0 },
  'google.protobuf.Timestamp': { type: 'string', format: 'date-time' },
};

const MARKER =
  /^\+(kubebuilder:validation:|protoc-gen-crd:(map-value-validation:|list-value-validation:|duration-validation:|validation:)|listType=|listMapKey=)/;

const checkout = process.argv[2];
if (checkout === undefined) {
  console.error('usage: node scripts/gen-istio-schemas.mjs <istio/api checkout>');
  process.exit(2);
}
const commit = execFileSync('git', ['-C', checkout, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
const work = mkdtempSync(join(tmpdir(), 'istio-api-'));
const image = join(work, 'image.binpb');
try {
  const paths = PROTO_DIRS.flatMap((d) => ['--path', d]);
  execFileSync(join(process.cwd(), 'node_modules/.bin/buf'), ['build', ...paths, '-o', image], {
    cwd: checkout,
    stdio: 'inherit',
  });
  const set = fromBinary(FileDescriptorSetSchema, readFileSync(image));
  const crds = generate(set);
  const { definitions, emit } = hoistRepeats(crds);
  const header = [
    `// Generated by scripts/gen-istio-schemas.mjs from istio/api ${commit}: do not edit.`,
    `import type { CustomResourceSource, JsonSchema } from './json-schema.js';`,
    '',
    '// Schemas that recur (messages used in several places), each written once.',
    ...definitions.map(({ name, node }) => `const ${name}: JsonSchema = ${emit(node, name)};`),
    '',
    `/** Istio's CustomResourceDefinitions, in the order of Istio's crd-all.gen.yaml (by group, then name). */`,
    `export const ISTIO_CRDS: readonly CustomResourceSource[] = ${emit(crds)};`,
    '',
  ].join('\n');
  const options = await prettier.resolveConfig(OUT);
  writeFileSync(OUT, await prettier.format(header, { ...options, parser: 'typescript' }));
  console.log(`wrote ${OUT}: ${crds.map((c) => c.kind).join(', ')}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}

function generate(set) {
  const messages = new Map();
  const enums = new Map();
  const frontMatter = new Map();
  for (const file of set.file) {
    const comments = new Map(
      (file.sourceCodeInfo?.location ?? []).map((l) => [l.path.join('.'), l.leadingComments ?? '']),
    );
    const matter = parseFrontMatter(file);
    const visit = (list, prefix, pathPrefix) =>
      list.forEach((m, i) => {
        const path = [...pathPrefix, i];
        const name = `${prefix}.${m.name}`;
        messages.set(name, { m, comment: comments.get(path.join('.')) ?? '', comments, path, file });
        m.enumType.forEach((e) => enums.set(`${name}.${e.name}`, e));
        visit(m.nestedType, name, [...path, 3]);
      });
    visit(file.messageType, `.${file.package}`, [4]);
    file.enumType.forEach((e) => enums.set(`.${file.package}.${e.name}`, e));
    for (const s of matter.schemas) frontMatter.set(`.${s}`, matter.description);
  }

  const schemaOf = (typeName) => messageSchema(messages.get(typeName), messages, enums);
  const crds = [];
  for (const [name, msg] of messages) {
    const tags = parseGenTags(msg.comment);
    if (tags === undefined) continue;
    const kind = name.slice(name.lastIndexOf('.') + 1);
    const resource = keyValues(tags.get('resource') ?? '');
    const plural = resource.plural ?? `${kind.toLowerCase()}s`;
    const versionList = (tags.get('versions') ?? '').split(',').filter((v) => v !== '');
    const single = tags.get('version');
    const versions = single !== undefined ? [single] : versionList;
    // One `version` is the storage version when tagged so; of a `versions` list, the first is.
    let storage = versions[0];
    if (single !== undefined && !tags.has('storageVersion')) storage = undefined;
    const spec = { ...schemaOf(name) };
    const description = frontMatter.get(name);
    if (description !== undefined) spec.description = description;
    const properties = { spec };
    if ((tags.get('subresource') ?? '').split('=')[0] === 'status') {
      const statusType = tags.get('subresource').split('=')[1] ?? STATUS_MESSAGE;
      properties.status = { ...schemaOf(`.${statusType}`), 'x-kubernetes-preserve-unknown-fields': true };
      delete properties.status.description;
    }
    const schema = { type: 'object', properties, ...(tags.get('spec') === 'required' ? { required: ['spec'] } : {}) };
    const replacement = tags.get('deprecationReplacement');
    crds.push({
      group: tags.get('groupName'),
      kind,
      plural,
      singular: resource.singular ?? kind.toLowerCase(),
      listKind: resource.listKind ?? `${kind}List`,
      shortNames: resource.shortNames?.split(',') ?? [],
      categories: resource.categories?.split(',') ?? [],
      labels: keyValues(tags.get('labels') ?? ''),
      annotations: keyValues(tags.get('annotations') ?? ''),
      versions: [...versions].sort().map((v) => ({
        name: v,
        served: true,
        storage: v === storage,
        ...(replacement !== undefined
          ? {
              deprecated: true,
              deprecationWarning: `${plural}.${tags.get('groupName')} version "${v}" is deprecated, use "${replacement}"`,
            }
          : {}),
      })),
      printerColumns: (tags.get('printerColumn') ?? '')
        .split(';;')
        .filter((c) => c !== '')
        .map((c) => {
          const kv = keyValues(c);
          return {
            name: kv.name,
            type: kv.type,
            jsonPath: kv.JSONPath,
            ...(kv.description ? { description: kv.description } : {}),
          };
        }),
      schema: sortKeys(schema),
    });
  }
  return crds.sort((a, b) => (a.group + a.plural < b.group + b.plural ? -1 : 1));
}

/** `$schema:`, `$description:` and `$location:` from a file's comments (Istio's doc front matter). */
function parseFrontMatter(file) {
  const lines = (file.sourceCodeInfo?.location ?? [])
    .flatMap((l) => [...l.leadingDetachedComments, l.leadingComments ?? ''])
    .flatMap((c) => c.split('\n'))
    .map((l) => l.trim());
  const value = (key) =>
    lines
      .find((l) => l.startsWith(`$${key}:`))
      ?.slice(key.length + 2)
      .trim();
  const schemas = lines.filter((l) => l.startsWith('$schema:')).map((l) => l.slice('$schema:'.length).trim());
  const description = value('description');
  const location = value('location');
  return { schemas, description: description && `${description} See more details at: ${location}` };
}

/** `+cue-gen:<Kind>:<key>:<value>` tags; a value runs on over untagged lines up to the next tag or `-->`. */
function parseGenTags(comment) {
  const tags = new Map();
  let current;
  const flush = () => {
    if (current === undefined) return;
    const [, key, ...rest] = current.slice('+cue-gen:'.length).split(':');
    const value = rest.join(':');
    tags.set(key, tags.has(key) ? `${tags.get(key)};;${value}` : value);
    current = undefined;
  };
  for (const raw of comment.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('+cue-gen:')) {
      flush();
      current = line;
    } else if (line === '-->') flush();
    else if (current !== undefined && line !== '') current += ` ${line}`;
  }
  flush();
  return tags.size > 0 ? tags : undefined;
}

/** `a=b,c=d,e` style lists, where a value may hold commas up to the next `key=`; quotes around values dropped. */
function keyValues(s) {
  const out = {};
  if (s === '') return out;
  const parts = s.split('=');
  let key = parts[0];
  for (let i = 1; i < parts.length; i++) {
    const last = i === parts.length - 1;
    const cut = last ? parts[i].length : parts[i].lastIndexOf(',');
    out[key] = parts[i].slice(0, cut).replace(/^["'`]|["'`]$/g, '');
    key = parts[i].slice(cut + 1);
  }
  return out;
}

/** The first sentence of a comment, as Istio's generator shortens descriptions. */
function describe(comment) {
  const c = comment.trim();
  if (c.includes('$hide_from_docs')) return '';
  const words = c.split(/\s+/);
  const end = words.findIndex((w) => w.endsWith('.'));
  return end < 0 ? '' : words.slice(0, end + 1).join(' ');
}

function messageSchema(msg, messages, enums) {
  const { m, comment, comments, path } = msg;
  const schema = { type: 'object', properties: {} };
  const description = describe(comment);
  if (description !== '') schema.description = description;
  const required = [];
  const oneofs = m.oneofDecl.map(() => []);
  m.field.forEach((f, i) => {
    const fieldComment = comments.get([...path, 2, i].join('.')) ?? '';
    const s = fieldSchema(f, fieldComment, messages, enums);
    schema.properties[f.jsonName] = s;
    const alt = /\+kubebuilder:altName=(\S+)/.exec(fieldComment);
    if (alt) schema.properties[alt[1]] = s;
    if (isRequired(f)) required.push(f.jsonName);
    if (isFieldSet(f, FieldDescriptorProtoSchema.field.oneofIndex) && !f.proto3Optional)
      oneofs[f.oneofIndex]?.push(f.jsonName);
  });
  if (required.length > 0) schema.required = required;
  const alternatives = oneofs
    .filter((names) => names.length > 0)
    .map((names) => {
      const each = names.map((n) => ({ required: [n] }));
      return [{ not: { anyOf: each } }, ...each];
    });
  if (alternatives.length === 1) schema.oneOf = alternatives[0];
  else if (alternatives.length > 1) schema.allOf = alternatives.map((oneOf) => ({ oneOf }));
  applyMarkers(schema, comment);
  return schema;
}

function fieldSchema(f, comment, messages, enums) {
  let schema;
  let isMap = false;
  const description = describe(comment);
  switch (f.type) {
    case T.float:
    case T.double:
      schema = { type: 'number', format: 'double' };
      break;
    case T.int32:
    case T_SINT32:
    case T_SFIXED32:
      schema = { type: 'integer', format: 'int32' };
      break;
    case T.int64:
    case T_SINT64:
    case T_SFIXED64:
      schema = { type: 'integer', format: 'int64' };
      break;
    case T.uint64:
    case T.fixed64:
      schema = { type: 'integer', minimum: 0 };
      break;
    case T_UINT32:
    case T.fixed32:
      schema = { type: 'integer', minimum: 0, maximum: MAX_UINT32 };
      break;
    case T.bool:
      schema = { type: 'boolean' };
      break;
    case T.string:
      schema = { type: 'string' };
      break;
    case T_BYTES:
      schema = { type: 'string', format: 'byte' };
      break;
    case T_ENUM: {
      const e = enums.get(f.typeName);
      const names = e.value.map((v) => v.name);
      const shown = /UNSPECIFIED|UNSET|UNDEFINED|INVALID/.test(names[0] ?? '') ? names.slice(1) : names;
      schema = { type: 'string', enum: names, description: `${description}\n\nValid Options: ${shown.join(', ')}` };
      break;
    }
    case T_MESSAGE: {
      const known = WELL_KNOWN[f.typeName.slice(1)];
      const msg = messages.get(f.typeName);
      if (known !== undefined) schema = JSON.parse(JSON.stringify(known));
      else if (msg.m.options?.mapEntry) {
        isMap = true;
        const value = msg.m.field[1];
        schema = { type: 'object', additionalProperties: fieldSchema(value, '', messages, enums) };
        delete schema.additionalProperties.description;
      } else schema = messageSchema(msg, messages, enums);
      break;
    }
    default:
      throw new Error(`field ${f.name}: proto type ${f.type} has no schema`);
  }
  if (f.type !== T_ENUM) {
    if (description !== '') schema.description = description;
    else delete schema.description;
  }
  if (f.label === LABEL_REPEATED && !isMap) {
    const items = schema;
    schema = { type: 'array', items };
    if (items.description !== undefined) schema.description = items.description;
    delete items.description;
  }
  applyMarkers(schema, comment);
  return schema;
}

function isRequired(f) {
  for (const u of f.options?.$unknown ?? []) {
    if (u.no !== FIELD_BEHAVIOR) continue;
    const values = u.wireType === 0 ? readVarints(u.data) : readVarints(u.data).slice(1);
    if (values.includes(REQUIRED_BEHAVIOR)) return true;
  }
  return false;
}

function readVarints(bytes) {
  const out = [];
  let v = 0;
  let shift = 0;
  for (const b of bytes) {
    v += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if ((b & 0x80) === 0) {
      out.push(v);
      v = 0;
      shift = 0;
    }
  }
  return out;
}

/** Applies the validation markers of a comment to the schema they describe. */
function applyMarkers(schema, comment) {
  for (const raw of comment.split('\n')) {
    const line = raw.trim();
    if (!MARKER.test(line)) continue;
    let target = schema;
    let marker = line;
    if (line.startsWith('+protoc-gen-crd:map-value-validation:')) {
      target = schema.additionalProperties;
      marker = line.replace('+protoc-gen-crd:map-value-validation:', '+kubebuilder:validation:');
    } else if (line.startsWith('+protoc-gen-crd:list-value-validation:')) {
      target = schema.items;
      marker = line.replace('+protoc-gen-crd:list-value-validation:', '+kubebuilder:validation:');
    }
    if (marker === '+protoc-gen-crd:duration-validation:none') {
      delete target['x-kubernetes-validations'];
      return;
    }
    if (marker.startsWith('+listType=')) {
      target['x-kubernetes-list-type'] = marker.slice('+listType='.length);
      continue;
    }
    if (marker.startsWith('+listMapKey=')) {
      target['x-kubernetes-list-map-keys'] = [...(target['x-kubernetes-list-map-keys'] ?? []), marker.slice(12)];
      continue;
    }
    if (marker === '+protoc-gen-crd:validation:XIntOrString') {
      delete target.type;
      delete target.format;
      target.anyOf = [{ type: 'integer' }, { type: 'string' }];
      target['x-kubernetes-int-or-string'] = true;
      continue;
    }
    if (marker.startsWith('+protoc-gen-crd:validation:IgnoreSubValidation:')) {
      const messages = new Set(JSON.parse(marker.slice('+protoc-gen-crd:validation:IgnoreSubValidation:'.length)));
      stripRules(target, messages);
      continue;
    }
    const body = marker.slice('+kubebuilder:validation:'.length);
    if (body.startsWith('XValidation:')) {
      const m = /^XValidation:message="(.*)",rule="(.*)"$/.exec(body);
      if (!m) throw new Error(`unparsable rule marker: ${line}`);
      target['x-kubernetes-validations'] = [
        ...(target['x-kubernetes-validations'] ?? []),
        { rule: expandMacros(m[2]), message: m[1] },
      ];
      continue;
    }
    const [name, value] = [body.slice(0, body.indexOf('=')), body.slice(body.indexOf('=') + 1)];
    const numeric = { MaxItems: 'maxItems', MinItems: 'minItems', MaxLength: 'maxLength', MinLength: 'minLength' };
    if (name in numeric) target[numeric[name]] = Number(value);
    else if (name === 'Minimum') target.minimum = Number(value);
    else if (name === 'Maximum') target.maximum = Number(value);
    else if (name === 'MaxProperties') target.maxProperties = Number(value);
    else if (name === 'MinProperties') target.minProperties = Number(value);
    else if (name === 'Pattern') target.pattern = value.replace(/^[`"]|[`"]$/g, '');
    else throw new Error(`unknown marker: ${line}`);
  }
}

function stripRules(schema, messages) {
  if (schema === null || typeof schema !== 'object') return;
  if (Array.isArray(schema['x-kubernetes-validations'])) {
    schema['x-kubernetes-validations'] = schema['x-kubernetes-validations'].filter((r) => !messages.has(r.message));
    if (schema['x-kubernetes-validations'].length === 0) delete schema['x-kubernetes-validations'];
  }
  for (const v of Object.values(schema)) if (typeof v === 'object') stripRules(v, messages);
}

/**
 * The CEL macros Istio's markers use, written out: `oneof(a, b)` (at most one set), `default(x, v)` (x, or v when
 * unset) and `x.index({}, a, b)` (x.a.b, or {} when a step is unset).
 */
function expandMacros(rule) {
  let out = rule;
  out = replaceCalls(out, 'oneof', (args) => `${args.map((a) => `(has(${a}) ? 1 : 0)`).join(' + ')} <= 1`);
  out = replaceCalls(out, 'default', ([x, v]) => `(has(${x}) ? ${x} : ${v})`);
  out = out.replace(/([\w.]+)\.index\(\{\}, ([\w, ]+)\)/g, (_, base, steps) => {
    const names = steps.split(',').map((s) => s.trim());
    const paths = names.map((_, i) => `${base}.${names.slice(0, i + 1).join('.')}`);
    return `((${paths.map((p) => `has(${p})`).join(' && ')}) ? ${paths.at(-1)} : {})`;
  });
  return out;
}

/** Replaces every call `name(args)` (balanced parentheses, top-level commas) with `render(args)`. */
function replaceCalls(text, name, render) {
  const re = new RegExp(`(?<![\\w.])${name}\\(`);
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const args = [];
    let depth = 0;
    let start = m.index + name.length + 1;
    let i = start;
    for (; i < text.length; i++) {
      const c = text[i];
      if (c === '(' || c === '[' || c === '{') depth++;
      else if ((c === ')' || c === ']' || c === '}') && depth > 0) depth--;
      else if (c === ')' && depth === 0) break;
      else if (c === ',' && depth === 0) {
        args.push(text.slice(start, i).trim());
        start = i + 1;
      }
    }
    args.push(text.slice(start, i).trim());
    text = text.slice(0, m.index) + render(args) + text.slice(i + 1);
  }
  return text;
}

/** Object keys in sorted order at every level (as Go writes maps), so the output is stable. */
function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, sortKeys(v[k])]),
  );
}

/**
 * Finds the schema objects that occur more than once (a message used in several fields, as DestinationRule's
 * traffic policy is) and names each after the field it first appears under, so the output writes it once.
 * `emit` writes a value as source, naming the hoisted objects (but not the one being defined).
 */
function hoistRepeats(crds) {
  const counts = new Map();
  const firstKey = new Map();
  // Only schemas count (not `properties` maps or printer columns), each under the field it describes.
  const walk = (schema, key) => {
    const text = JSON.stringify(schema);
    counts.set(text, (counts.get(text) ?? 0) + 1);
    if (!firstKey.has(text)) firstKey.set(text, key);
    for (const [k, child] of Object.entries(schema.properties ?? {})) walk(child, k);
    if (schema.items !== undefined) walk(schema.items, `${key}Item`);
    if (typeof schema.additionalProperties === 'object') walk(schema.additionalProperties, `${key}Value`);
  };
  for (const c of crds) walk(c.schema, c.kind);
  const names = new Map();
  const used = new Set();
  const repeated = [...counts]
    .filter(([text, n]) => n > 1 && text.length > 300)
    .map(([text]) => text)
    .sort((a, b) => a.length - b.length);
  for (const text of repeated) {
    const base = firstKey
      .get(text)
      .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
      .toUpperCase()
      .replace(/[^A-Z0-9_]/g, '_');
    let name = base;
    for (let i = 2; used.has(name) || /^[0-9]/.test(name); i++) name = `${base}_${i}`;
    used.add(name);
    names.set(text, name);
  }
  const emit = (v, defining) => {
    if (v === null || typeof v !== 'object') return JSON.stringify(v);
    if (Array.isArray(v)) return `[${v.map((x) => emit(x)).join(', ')}]`;
    const name = names.get(JSON.stringify(v));
    if (name !== undefined && name !== defining) return name;
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}: ${emit(x)}`)
      .join(', ')}}`;
  };
  const definitions = repeated.map((text) => ({ name: names.get(text), node: JSON.parse(text) }));
  return { definitions, emit };
}
