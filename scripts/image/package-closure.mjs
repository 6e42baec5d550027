// The installed packages a set of packages needs at run time: each one's dependencies and optional dependencies,
// found in node_modules as Node resolves them (the nearest node_modules up from the package that needs it), and
// theirs in turn. Optional dependencies that npm did not install (another platform's prebuilt binary) are skipped.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

function resolveFrom(dir, name) {
  for (let d = dir; ; d = path.dirname(d)) {
    const candidate = path.join(d, 'node_modules', name);
    if (existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (path.dirname(d) === d) return undefined;
  }
}

/** The directories of `names` (resolved from `root`) and of everything they depend on, relative to `root`. */
export function packageClosure(root, names) {
  const found = new Set();
  const visit = (dir, name, optional) => {
    const pkg = resolveFrom(dir, name);
    if (pkg === undefined) {
      if (optional) return;
      throw new Error(`${name} (needed from ${path.relative(root, dir) || '.'}) is not installed: run npm ci`);
    }
    if (found.has(pkg)) return;
    found.add(pkg);
    const manifest = JSON.parse(readFileSync(path.join(pkg, 'package.json'), 'utf8'));
    for (const dep of Object.keys(manifest.dependencies ?? {})) visit(pkg, dep, false);
    for (const dep of Object.keys(manifest.optionalDependencies ?? {})) visit(pkg, dep, true);
  };
  for (const name of names) visit(root, name, false);
  return [...found].map((p) => path.relative(root, p)).sort();
}
