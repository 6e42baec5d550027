import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from './package-root.js';

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as {
      name?: string;
      version?: string;
    };
    if (pkg.name === 'amesh' && pkg.version !== undefined) return pkg.version;
  } catch {
    // No package.json above this file: the version is unknown.
  }
  return '0.0.0-unknown';
}

/** amesh's version, from its package.json. */
export const VERSION = packageVersion();
/** The Istio release whose wire protocols amesh speaks (spec snapshot: 1.32-dev). */
export const ISTIO_COMPAT = '1.32';
