import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../lib/package-root.js';

const ROOM = path.join(packageRoot(), 'src', 'h2');
/** Every module specifier of a file: static imports and re-exports (types too), side-effect and dynamic imports. */
const SPECIFIER = /\bfrom\s+['"]([^'"]+)['"]|\bimport\s*\(?\s*['"]([^'"]+)['"]/g;

/** The layer's own modules: every .ts below src/h2 but its tests, which may use the project's test helpers. */
function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return modules(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [p] : [];
  });
}

test('src/h2 is a ground floor: its modules import only node:* and each other, never ztunnel, lib or a package', () => {
  const files = modules(ROOM);
  assert.ok(files.length > 20, `found ${files.length} modules`);
  const outside: string[] = [];
  for (const file of files) {
    for (const m of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
      const spec = (m[1] ?? m[2])!;
      const inside =
        spec.startsWith('node:') ||
        (spec.startsWith('.') && !path.relative(ROOM, path.resolve(path.dirname(file), spec)).startsWith('..'));
      if (!inside) outside.push(`${path.relative(ROOM, file)} imports ${spec}`);
    }
  }
  assert.deepEqual(outside, []);
});
