/**
 * The static import graph of a TypeScript entry point in this repo: every local module it loads at start, and
 * the packages they import. `import type` is left out (erased at compile time), as are dynamic `import()`s (they
 * load only when reached).
 */
import { existsSync, readFileSync } from 'node:fs';
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
