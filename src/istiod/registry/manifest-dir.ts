/**
 * Manifests: the Kubernetes-style objects istiod reads, parsed from multi-document YAML with each document's
 * `file:line`, or checked as they come from the Kubernetes API (`kube-source.ts`), against `manifest-schema.ts`.
 */
import { readdir, readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { LineCounter, isScalar, parseAllDocuments, type Document, type Node } from 'yaml';
import {
  denyListsWithNothingValid,
  documentSchema,
  topLevelFields,
  isResourceKind,
  kindSchema,
  SchemaWalker,
  type CheckedDocument,
  type OwnerReference,
  type ResourceKind,
  type SpecOf,
  type StatusOf,
} from './manifest-schema.js';
import { MeshError } from '../../lib/errors.js';
import { asRecord } from '../../lib/record.js';

/** What the validation step gives of `metadata`: namespace and labels filled in, fields amesh ignores left out. */
export interface Metadata {
  readonly name: string;
  /** Empty for a cluster-scoped kind; `default` when a namespaced object names none. */
  readonly namespace: string;
  readonly uid?: string;
  readonly generateName?: string;
  /** RFC 3339, as the API server sets it; absent in hand-written manifests. */
  readonly creationTimestamp?: string;
  /** RFC 3339: the object is being deleted (a pod terminating). */
  readonly deletionTimestamp?: string;
  readonly ownerReferences?: readonly OwnerReference[];
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

/** One checked object of kind `K`, with where it came from. */
interface Checked<K extends string, Spec, Status> {
  readonly apiVersion: string;
  readonly kind: K;
  readonly metadata: Metadata;
  readonly spec: Spec;
  readonly status: Status;
  /** `file:line` of the document. */
  readonly source: string;
  readonly file: string;
  /** The whole document as written, for applying it to an API server (absent for fail-closed stand-ins). */
  readonly document?: Readonly<Record<string, unknown>>;
}

/** An object of a kind amesh reads, its spec and status typed by that kind's schema; `kind` tells which. */
export type Resource = { [K in ResourceKind]: Checked<K, SpecOf<K>, StatusOf<K>> }[ResourceKind];
export type ResourceOf<K extends ResourceKind> = Extract<Resource, { readonly kind: K }>;

declare const foreign: unique symbol;
/** A kind amesh does not read: only `checkDocument` gives one, so a `ForeignObject` never poses as a `Resource`. */
export type ForeignKind = string & { readonly [foreign]: true };

/** An object of a kind amesh does not read: checked only as a document, kept to be applied to an API server. */
export type ForeignObject = Checked<ForeignKind, Readonly<Record<string, unknown>>, Readonly<Record<string, unknown>>>;

/** One Kubernetes-style object from a manifest file or the Kubernetes API, checked against its kind's schema. */
export type Manifest = Resource | ForeignObject;

/** True when `o` is of a kind amesh reads: after this, `o.kind` tells its spec's type. */
export function isResource(o: Manifest): o is Resource {
  return isResourceKind(o.kind);
}

/** Which object a document is: `Kind/namespace/name` (namespace empty for cluster-scoped kinds). */
export function objectKey(o: { kind: string; metadata: { namespace: string; name: string } }): string {
  return `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`;
}

/** What changed in one batch: each object's key with its new version, or undefined when it left. */
export type ObjectChanges = ReadonlyMap<string, Manifest | undefined>;

/** A document that names an object but was refused: that object keeps its last good version. */
export interface RejectedObject {
  readonly key: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly source: string;
}

export interface ManifestLoad {
  readonly objects: readonly Manifest[];
  /** Problems as `file:line: reason`; the rest of the directory still loads. */
  readonly errors: readonly MeshError[];
  /** Values amesh ignores, as `file:line: reason`; their objects are in use. */
  readonly warnings: readonly string[];
  /** Documents refused whose object could still be named. */
  readonly rejected: readonly RejectedObject[];
  /**
   * Files with any problem (unreadable, invalid YAML, a refused document): every object they held keeps its last
   * good version unless the file now holds a good one. A half-written file is one of these.
   */
  readonly damaged: readonly string[];
}

/** What one document gave: nothing, an object, or its problems. */
interface DocumentResult {
  readonly objects: readonly Manifest[];
  readonly errors: readonly MeshError[];
  readonly warnings: readonly string[];
  readonly rejected: readonly RejectedObject[];
}

/** One file as last parsed: its text, what it gave, and each document's result by its line and text. */
interface ParsedFile {
  readonly text: string;
  readonly load: ManifestLoad;
  readonly documents: ReadonlyMap<string, DocumentResult>;
}

/** What `loadManifestDir` parsed, by file path: unchanged files and documents are not parsed again. */
export type ParsedFiles = ReadonlyMap<string, ParsedFile>;

/** Parsing yields to the event loop after this long, so a large edit never holds up the CA or xDS for longer. */
const PARSE_SLICE_MS = 10;

/**
 * Reads every `*.yaml` / `*.yml` file in `dir` (multi-document YAML), keeping each object's `file:line`. A bad
 * document is reported and skipped; it never takes the other documents down with it. Hidden entries (a
 * ConfigMap mount's `..data` and `..2026_…` directories) are not read; the files linked to them are. What
 * `previous` parsed is reused: a file whose text is unchanged, and in a changed file each document whose text
 * and first line are unchanged, give the very same objects without being parsed again.
 */
export async function loadManifestDir(
  dir: string,
  previous: ParsedFiles = new Map(),
): Promise<ManifestLoad & { readonly parsed: ParsedFiles }> {
  const files = (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f) && !f.startsWith('.')).sort();
  const all = {
    objects: [] as Manifest[],
    errors: [] as MeshError[],
    warnings: [] as string[],
    rejected: [] as RejectedObject[],
    damaged: [] as string[],
  };
  const parsed = new Map<string, ParsedFile>();
  for (const f of files) {
    const file = path.join(dir, f);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      // A file that vanished between readdir and read was removed; anything else keeps its objects.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      all.errors.push(new MeshError('ISTIOD_ERR_MANIFEST', `${file}: cannot read: ${(e as Error).message}`));
      all.damaged.push(file);
      continue;
    }
    const before = previous.get(file);
    const r = before?.text === text ? before : await parseFileYielding(file, text, before?.documents);
    parsed.set(file, r);
    all.objects.push(...r.load.objects);
    all.errors.push(...r.load.errors);
    all.warnings.push(...r.load.warnings);
    all.rejected.push(...r.load.rejected);
    all.damaged.push(...r.load.damaged);
  }
  return { ...all, parsed };
}

/** Parses one multi-document YAML text; bad documents are reported with `file:line` and skipped. */
export function parseManifests(file: string, text: string): ManifestLoad {
  const parsing = parseDocuments(file, text, new Map());
  for (let step = parsing.next(); ; step = parsing.next()) if (step.done === true) return step.value.load;
}

/** Parses a file, reusing `previous` documents, yielding to the event loop whenever it has worked for PARSE_SLICE_MS. */
async function parseFileYielding(
  file: string,
  text: string,
  previous: ReadonlyMap<string, DocumentResult> = new Map(),
): Promise<ParsedFile> {
  const parsing = parseDocuments(file, text, previous);
  let sliceStart = performance.now();
  for (let step = parsing.next(); ; step = parsing.next()) {
    if (step.done === true) return step.value;
    if (performance.now() - sliceStart < PARSE_SLICE_MS) continue;
    await new Promise<void>((resolve) => setImmediate(resolve));
    sliceStart = performance.now();
  }
}

/**
 * The start of each document: a `---` marker at the start of a line, where YAML ends any scalar still open, so
 * documents can be parsed one at a time with the same result as the whole stream.
 */
function documentStarts(text: string): number[] {
  const starts = [0];
  for (const m of text.matchAll(/^---(?=[ \t\r\n]|$)/gm)) if (m.index > 0) starts.push(m.index);
  return starts;
}

/** Parses the documents one at a time (reusing those `previous` holds), pausing after each; returns what they hold. */
function* parseDocuments(
  file: string,
  text: string,
  previous: ReadonlyMap<string, DocumentResult>,
): Generator<void, ParsedFile> {
  const out = {
    objects: [] as Manifest[],
    errors: [] as MeshError[],
    warnings: [] as string[],
    rejected: [] as RejectedObject[],
    damaged: [] as string[],
  };
  const documents = new Map<string, DocumentResult>();
  const fileLines = new LineCounter();
  fileLines.addNewLine(0);
  for (const m of text.matchAll(/\n/g)) fileLines.addNewLine(m.index + 1);
  const starts = documentStarts(text);
  for (let i = 0; i < starts.length; i++) {
    const from = starts[i]!;
    const source = text.slice(from, starts[i + 1]);
    // The same text on the same line gives the same objects, `file:line` included.
    const key = `${String(fileLines.linePos(from).line)}\n${source}`;
    const r = previous.get(key) ?? parseDocument(file, source, (offset) => fileLines.linePos(from + offset));
    documents.set(key, r);
    out.objects.push(...r.objects);
    out.errors.push(...r.errors);
    out.warnings.push(...r.warnings);
    out.rejected.push(...r.rejected);
    yield;
  }
  if (out.errors.length > 0) out.damaged.push(file);
  return { text, load: out, documents };
}

/** Parses the text of one document (or of none: a comment, an empty stream); `linePos` maps its offsets to the file's lines. */
function parseDocument(
  file: string,
  source: string,
  linePos: (offset: number) => { line: number; col: number },
): DocumentResult {
  const out = {
    objects: [] as Manifest[],
    errors: [] as MeshError[],
    warnings: [] as string[],
    rejected: [] as RejectedObject[],
  };
  const lines = { linePos };
  for (const doc of parseAllDocuments(source, { uniqueKeys: true })) {
    if (doc.errors.length > 0) {
      out.errors.push(
        new MeshError(
          'ISTIOD_ERR_MANIFEST',
          `${file}:${lines.linePos(doc.errors[0]!.pos[0]).line}: invalid YAML: ${doc.errors[0]!.message.split('\n')[0] ?? ''}`,
        ),
      );
      continue;
    }
    const contents = doc.contents as Node | null;
    if (contents === null || (isScalar(contents) && contents.value === null)) continue;
    const walker = new SchemaWalker(lines);
    // The line of the document's content, not of its `---` marker.
    const where = `${file}:${walker.line(contents)}`;
    checkDocument(doc.toJS() as unknown, doc, walker, { where, file, at: (line) => `${file}:${line}: ` }, out);
  }
  return out;
}

/** Where a document came from: its object's `source` and `file`, and the prefix of its messages. */
export interface DocumentOrigin {
  readonly where: string;
  readonly file: string;
  /** `file:line: ` for a line of a file; nothing for an object of the Kubernetes API (messages name it). */
  readonly at: (line: number) => string;
}

type Collected = { objects: Manifest[]; errors: MeshError[]; warnings: string[]; rejected: RejectedObject[] };

/** The namespace of an object: none for a cluster-scoped kind, `default` when a namespaced object names none. */
function namespaceOf(kind: string | undefined, meta: Record<string, unknown>): string {
  if (kind !== undefined && kindSchema(kind)?.clusterScoped === true) return '';
  return typeof meta['namespace'] === 'string' ? meta['namespace'] : 'default';
}

/**
 * Checks one document, its value `o` and its YAML node tree `doc` (for lines and paths), against its kind's
 * schema, and adds the object, or its problems, to `out`.
 */
export function checkDocument(
  o: unknown,
  doc: Document.Parsed | Document,
  walker: SchemaWalker,
  origin: DocumentOrigin,
  out: Collected,
): void {
  const { where, at } = origin;
  const contents = doc.contents as Node;
  const r = asRecord(o);
  const meta = asRecord(r['metadata']);
  const kind = typeof r['kind'] === 'string' ? r['kind'] : undefined;
  const name = typeof meta['name'] === 'string' ? meta['name'] : undefined;
  const namespace = namespaceOf(kind, meta);
  const what = `${kind ?? 'document'}${name === undefined ? '' : ` ${namespace === '' ? '' : namespace + '/'}${name}`}`;
  const schema = kind === undefined ? undefined : kindSchema(kind);
  if (kind !== undefined && schema === undefined)
    out.warnings.push(`${at(walker.line(contents))}${what}: kind ${kind} is not used by amesh istiod; ignored`);
  walker.walk(contents, documentSchema(schema), '');
  // What the walker found valid is what `documentSchema` describes: this is where the value takes that type.
  const checked = walker.errors.length === 0 ? checkedObject(r as CheckedDocument, namespace, origin) : undefined;
  if (checked !== undefined && isResource(checked) && checked.kind === 'AuthorizationPolicy') {
    for (const p of denyListsWithNothingValid(checked.spec)) {
      walker.errors.push({
        line: walker.line(doc.getIn(p, true) as Node | undefined),
        path: p.join('.').replace(/\.(\d+)/g, '[$1]'),
        reason: 'no valid value left once invalid ones are skipped; this DENY rule would deny nothing',
      });
    }
  }
  for (const w of walker.warnings) out.warnings.push(`${at(w.line)}${what}: ${w.path}: ${w.reason}`);
  if (checked === undefined || walker.errors.length > 0) {
    for (const e of walker.errors)
      out.errors.push(
        new MeshError('ISTIOD_ERR_MANIFEST', `${at(e.line)}${what}: ${e.path === '' ? '' : e.path + ': '}${e.reason}`),
      );
    if (kind !== undefined && name !== undefined)
      out.rejected.push({ key: `${kind}/${namespace}/${name}`, kind, namespace, name, source: where });
    return;
  }
  out.objects.push(checked);
}

/**
 * The object of a document found valid against `documentSchema` for its kind: metadata filled in, and spec and
 * status of the types `Infer` reads off that kind's schemas (an absent or null spec or status is empty).
 */
function checkedObject(d: CheckedDocument, namespace: string, origin: DocumentOrigin): Manifest {
  const m = d.metadata;
  const metadata: Metadata = {
    name: m.name,
    namespace,
    ...(typeof m.uid === 'string' ? { uid: m.uid } : {}),
    ...(typeof m.generateName === 'string' ? { generateName: m.generateName } : {}),
    ...(typeof m.creationTimestamp === 'string' ? { creationTimestamp: m.creationTimestamp } : {}),
    ...(typeof m.deletionTimestamp === 'string' ? { deletionTimestamp: m.deletionTimestamp } : {}),
    ...(Array.isArray(m.ownerReferences) ? { ownerReferences: m.ownerReferences.filter((x) => x !== null) } : {}),
    labels: m.labels ?? {},
    annotations: m.annotations ?? {},
  };
  const top = topLevelFields(kindSchema(d.kind));
  const object = {
    apiVersion: d.apiVersion,
    metadata,
    spec:
      top.length === 0
        ? asRecord(d.spec)
        : Object.fromEntries(top.flatMap((f) => (Object.hasOwn(d, f) ? [[f, asRecord(d)[f]]] : []))),
    status: asRecord(d.status),
    source: origin.where,
    file: origin.file,
    document: d,
  };
  if (!isResourceKind(d.kind)) return { ...object, kind: d.kind as ForeignKind };
  // The walker checked spec and status against this kind's schemas, so they are of the types `Resource` gives them
  // (too many kinds for the compiler to pair each kind with its own spec type here).
  return { ...object, kind: d.kind } as Manifest;
}
