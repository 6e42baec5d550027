import { LineCounter, isMap, isScalar, isSeq, parseAllDocuments, type Node } from 'yaml';
import { MeshError, type ErrorCode } from '../../lib/errors.js';

/**
 * A strict reader over a YAML node tree that reports problems as `file:line: path: reason`. It rejects
 * unknown fields, so a typo in a config file is an error instead of a silent default.
 */
export class YamlReader {
  constructor(
    readonly file: string,
    private readonly lines: LineCounter,
    private readonly code: ErrorCode,
  ) {}

  /** Parses `text` (one or more documents); syntax errors are reported with their line. */
  static parse(file: string, text: string, code: ErrorCode): { reader: YamlReader; docs: (Node | null)[] } {
    const lines = new LineCounter();
    const docs = parseAllDocuments(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
    const reader = new YamlReader(file, lines, code);
    const list = Array.isArray(docs) ? docs : [docs];
    for (const d of list) {
      const err = d.errors[0];
      if (err !== undefined) {
        const line = lines.linePos(err.pos[0]).line;
        throw new MeshError(code, `${file}:${line}: invalid YAML: ${err.message.split('\n')[0] ?? ''}`);
      }
    }
    return { reader, docs: list.map((d) => d.contents as Node | null) };
  }

  line(node: Node | null | undefined): number {
    const r = node?.range;
    return r === undefined || r === null ? 1 : this.lines.linePos(r[0]).line;
  }

  fail(node: Node | null | undefined, path: string, reason: string): never {
    throw new MeshError(this.code, `${this.file}:${this.line(node)}: ${path === '' ? '' : path + ': '}${reason}`);
  }

  /**
   * A mapping with string keys; keys outside `allowed` are rejected, and a missing `required` key is reported at
   * the mapping's line.
   */
  object(
    node: Node | null | undefined,
    path: string,
    allowed: readonly string[],
    required: readonly string[] = [],
  ): Map<string, Node | null> {
    if (!isMap(node)) this.fail(node, path, 'expected a mapping');
    const out = new Map<string, Node | null>();
    for (const pair of node.items) {
      const k = pair.key as Node | null;
      if (!isScalar(k)) this.fail(k ?? node, path, 'mapping keys must be scalars');
      const key = String(k.value);
      if (!allowed.includes(key)) {
        this.fail(k, path, `unknown field "${key}" (expected one of: ${allowed.join(', ')})`);
      }
      out.set(key, pair.value as Node | null);
    }
    for (const k of required) {
      const v = out.get(k);
      if (v === undefined || v === null || (isScalar(v) && v.value === null))
        this.fail(node, path === '' ? k : `${path}.${k}`, 'is required');
    }
    return out;
  }

  /** A mapping with arbitrary scalar keys (for port maps and the like). */
  entries(node: Node | null | undefined, path: string): [string, Node, Node | null][] {
    if (node === null || node === undefined) return [];
    if (!isMap(node)) this.fail(node, path, 'expected a mapping');
    return node.items.map((pair) => {
      const k = pair.key as Node | null;
      if (!isScalar(k)) this.fail(k ?? node, path, 'mapping keys must be scalars');
      return [String(k.value), k, pair.value as Node | null];
    });
  }

  list(node: Node | null | undefined, path: string): Node[] {
    if (node === null || node === undefined) return [];
    if (!isSeq(node)) this.fail(node, path, 'expected a list');
    return node.items as Node[];
  }

  str(node: Node | null | undefined, path: string, def?: string): string {
    if (node === null || node === undefined || (isScalar(node) && node.value === null)) {
      if (def !== undefined) return def;
      this.fail(node, path, 'is required');
    }
    const v = isScalar(node) ? node.value : undefined;
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
      this.fail(node, path, 'expected a string');
    return String(v);
  }

  int(node: Node | null | undefined, path: string, min: number, max: number, def?: number): number {
    if (node === null || node === undefined) {
      if (def !== undefined) return def;
      this.fail(node, path, 'is required');
    }
    const v = isScalar(node) ? node.value : undefined;
    const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max)
      this.fail(node, path, `expected an integer in ${min}..${max}, got ${JSON.stringify(v)}`);
    return n;
  }

  bool(node: Node | null | undefined, path: string, def: boolean): boolean {
    if (node === null || node === undefined) return def;
    if (!isScalar(node) || typeof node.value !== 'boolean') this.fail(node, path, 'expected true or false');
    return node.value;
  }

  oneOf<T extends string>(node: Node | null | undefined, path: string, values: readonly T[], def?: T): T {
    const s = this.str(node, path, def);
    if (!(values as readonly string[]).includes(s))
      this.fail(node, path, `expected one of ${values.join(', ')}, got "${s}"`);
    return s as T;
  }

  strings(node: Node | null | undefined, path: string): string[] {
    return this.list(node, path).map((n, i) => this.str(n, `${path}[${i}]`));
  }
}
