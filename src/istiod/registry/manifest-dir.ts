import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { LineCounter, parseAllDocuments } from 'yaml';
import { MeshError } from '../../lib/errors.js';

/** One Kubernetes-style object from a manifest file, with where it came from. */
export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace: string; readonly uid?: string; readonly labels: Readonly<Record<string, string>>; readonly annotations: Readonly<Record<string, string>> };
  readonly spec: Record<string, unknown>;
  readonly status: Record<string, unknown>;
  /** `file:line` of the document. */
  readonly source: string;
}

export interface ManifestLoad {
  readonly objects: readonly Manifest[];
  /** Problems as `file:line: reason`; the rest of the directory still loads. */
  readonly errors: readonly MeshError[];
}

const CLUSTER_SCOPED = new Set(['Namespace']);

/**
 * Reads every `*.yaml` / `*.yml` file in `dir` (multi-document YAML), keeping each object's `file:line`. A bad
 * document is reported and skipped; it never takes the other documents down with it.
 */
export async function loadManifestDir(dir: string): Promise<ManifestLoad> {
  const files = (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f) && !f.startsWith('.')).sort();
  const objects: Manifest[] = [];
  const errors: MeshError[] = [];
  for (const f of files) {
    const file = path.join(dir, f);
    const text = await readFile(file, 'utf8').catch((e: unknown) => {
      errors.push(new MeshError('ISTIOD_ERR_MANIFEST', `${file}: cannot read: ${(e as Error).message}`));
      return '';
    });
    const r = parseManifests(file, text);
    objects.push(...r.objects);
    errors.push(...r.errors);
  }
  return { objects, errors };
}

/** Parses one multi-document YAML text; bad documents are reported with `file:line` and skipped. */
export function parseManifests(file: string, text: string): ManifestLoad {
  const objects: Manifest[] = [];
  const errors: MeshError[] = [];
  const lines = new LineCounter();
  for (const doc of parseAllDocuments(text, { lineCounter: lines })) {
    // The line of the document's content, not of its `---` marker.
    const where = `${file}:${lines.linePos(doc.contents?.range?.[0] ?? doc.range[0]).line}`;
    if (doc.errors.length > 0) {
      errors.push(new MeshError('ISTIOD_ERR_MANIFEST', `${file}:${lines.linePos(doc.errors[0]!.pos[0]).line}: invalid YAML: ${doc.errors[0]!.message.split('\n')[0] ?? ''}`));
      continue;
    }
    const o = doc.toJS() as unknown;
    if (o === null || o === undefined) continue;
    const m = toManifest(o, where);
    if (m instanceof MeshError) errors.push(m);
    else objects.push(m);
  }
  return { objects, errors };
}

function toManifest(o: unknown, where: string): Manifest | MeshError {
  const bad = (why: string): MeshError => new MeshError('ISTIOD_ERR_MANIFEST', `${where}: ${why}`);
  if (typeof o !== 'object' || Array.isArray(o) || o === null) return bad('a manifest must be a mapping with apiVersion, kind and metadata');
  const r = o as Record<string, unknown>;
  if (typeof r['kind'] !== 'string' || typeof r['apiVersion'] !== 'string') return bad('apiVersion and kind are required');
  const meta = (r['metadata'] ?? {}) as Record<string, unknown>;
  if (typeof meta['name'] !== 'string' || meta['name'] === '') return bad(`${r['kind']}: metadata.name is required`);
  const strMap = (v: unknown, what: string): Record<string, string> | MeshError => {
    if (v === undefined || v === null) return {};
    if (typeof v !== 'object' || Array.isArray(v)) return bad(`${what} must be a mapping of strings`);
    return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, String(x)]));
  };
  const labels = strMap(meta['labels'], 'metadata.labels');
  if (labels instanceof MeshError) return labels;
  const annotations = strMap(meta['annotations'], 'metadata.annotations');
  if (annotations instanceof MeshError) return annotations;
  const ns = CLUSTER_SCOPED.has(r['kind']) ? '' : typeof meta['namespace'] === 'string' ? meta['namespace'] : 'default';
  return {
    apiVersion: r['apiVersion'],
    kind: r['kind'],
    metadata: { name: meta['name'], namespace: ns, ...(typeof meta['uid'] === 'string' ? { uid: meta['uid'] } : {}), labels, annotations },
    spec: (r['spec'] ?? {}) as Record<string, unknown>,
    status: (r['status'] ?? {}) as Record<string, unknown>,
    source: where,
  };
}
