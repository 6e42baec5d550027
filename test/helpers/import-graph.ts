/**
 * The static import graph of a TypeScript entry point in this repo: every local module it loads at start, and
 * the packages they import. `import type` is left out (erased at compile time), as are dynamic `import()`s (they
 * load only when reached).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const STATIC_IMPORT = /^\s*(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;

export interface ImportGraph {
  /** Local modules, relative to the repo root. */
  readonly files: ReadonlySet<string>;
  /** Packages (`name` or `@scope/name`), each with the first local module that imports it. */
  readonly packages: ReadonlyMap<string, string>;
}

export function importGraph(entry: string): ImportGraph {
  const files = new Set<string>();
  const packages = new Map<string, string>();
  const walk = (file: string): void => {
    const rel = path.relative(process.cwd(), file);
    if (files.has(rel)) return;
    files.add(rel);
    for (const m of readFileSync(file, 'utf8').matchAll(STATIC_IMPORT)) {
      const spec = m[1]!;
      if (spec.startsWith('.')) {
        const target = path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts');
        if (existsSync(target)) walk(target);
      } else if (!spec.startsWith('node:')) {
        const name = spec
          .split('/')
          .slice(0, spec.startsWith('@') ? 2 : 1)
          .join('/');
        if (!packages.has(name)) packages.set(name, rel);
      }
    }
  };
  walk(path.resolve(entry));
  return { files, packages };
}

/** Every module under `root` (test files and generated `src/api/` left out) with the local modules it imports statically. */
export function sourceImports(root: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const walk = (p: string): void => {
    if (statSync(p).isDirectory()) {
      for (const e of readdirSync(p)) walk(path.join(p, e));
      return;
    }
    if (!p.endsWith('.ts') || p.endsWith('.test.ts') || p.startsWith(path.join('src', 'api') + path.sep)) return;
    const targets: string[] = [];
    for (const m of readFileSync(p, 'utf8').matchAll(STATIC_IMPORT)) {
      const spec = m[1]!;
      if (!spec.startsWith('.')) continue;
      const target = path.relative(process.cwd(), path.resolve(path.dirname(p), spec).replace(/\.js$/, '.ts'));
      if (existsSync(target)) targets.push(target);
    }
    graph.set(p, targets);
  };
  walk(root);
  return graph;
}

/** The import cycles of `graph`: each strongly connected component of more than one module (Tarjan's algorithm). */
export function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1) cycles.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}
