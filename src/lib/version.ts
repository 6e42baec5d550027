import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageJson(): { version: string } {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const p = path.join(dir, 'package.json');
    if (existsSync(p)) {
      const pkg = JSON.parse(readFileSync(p, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'amesh' && pkg.version !== undefined) return { version: pkg.version };
    }
    dir = path.dirname(dir);
  }
  return { version: '0.0.0-unknown' };
}

/** amesh's version, from its package.json (works from `src/` under tsx and from `dist/`). */
export const VERSION = findPackageJson().version;
/** The Istio release whose wire protocols amesh speaks (spec snapshot: 1.32-dev). */
export const ISTIO_COMPAT = '1.32';
