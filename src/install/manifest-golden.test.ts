/**
 * `amesh manifest generate --set profile=<p>` pinned for each profile in test/golden/manifest-generate/<p>.yaml.
 * After an intended change, regenerate them with `UPDATE_GOLDEN=1 node scripts/run-tests.mjs
 * src/install/manifest-golden.test.ts` and review the diff.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../lib/package-root.js';
import { generateManifest } from './generate-manifest.js';
import { manifestYaml } from './manifest-yaml.js';
import { PROFILE_NAMES } from './profiles.js';
import { parseSetFlag } from './set-flag.js';

const DIR = path.join(packageRoot(), 'test', 'golden', 'manifest-generate');

for (const profile of PROFILE_NAMES) {
  test(`manifest generate --set profile=${profile} is test/golden/manifest-generate/${profile}.yaml`, () => {
    const { sets } = generateManifest({ files: [], sets: [parseSetFlag(`profile=${profile}`)] });
    const got = manifestYaml(sets.flatMap((s) => s.objects));
    const file = path.join(DIR, `${profile}.yaml`);
    if (process.env['UPDATE_GOLDEN'] === '1') {
      mkdirSync(DIR, { recursive: true });
      writeFileSync(file, got);
    }
    assert.equal(got, readFileSync(file, 'utf8'));
  });
}
