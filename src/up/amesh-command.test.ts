import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DATA_PATH_NODE_FLAGS } from '../lib/node-flags.js';
import { ameshCommand, buildIsCurrent } from './amesh-command.js';

test("every launcher of a ztunnel passes the data-path Node flags: ameshCommand, the bin shebang, npm run amesh, bin/amesh (amesh up's pods)", () => {
  assert.deepEqual(ameshCommand().args.slice(0, DATA_PATH_NODE_FLAGS.length), [...DATA_PATH_NODE_FLAGS]);
  const shebang = readFileSync(new URL('../cli/main.ts', import.meta.url), 'utf8').split('\n')[0]!;
  assert.equal(shebang, `#!/usr/bin/env -S node ${DATA_PATH_NODE_FLAGS.join(' ')}`);
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    scripts: Record<string, string>;
  };
  assert.ok(pkg.scripts['amesh']!.startsWith(`node ${DATA_PATH_NODE_FLAGS.join(' ')} `), pkg.scripts['amesh']);
  const bin = readFileSync(new URL('../../bin/amesh', import.meta.url), 'utf8');
  assert.match(
    bin,
    new RegExp(`^exec node ${DATA_PATH_NODE_FLAGS.join(' ')} "\\$here/\\.\\./dist/src/cli/main\\.js" "\\$@"$`, 'm'),
  );
});

test('from the source tree, amesh runs the build only while no source file is newer than the last build', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'amesh-build-current-'));
  try {
    const main = path.join(root, 'dist', 'src', 'cli', 'main.js');
    const buildInfo = path.join(root, 'dist', '.tsbuildinfo');
    const source = path.join(root, 'src', 'lib', 'ip.ts');
    await mkdir(path.dirname(main), { recursive: true });
    await mkdir(path.dirname(source), { recursive: true });
    await writeFile(source, '');
    await utimes(source, 2000, 2000);
    assert.equal(buildIsCurrent(root), false, 'no build');
    await writeFile(main, '');
    await writeFile(buildInfo, '');
    await utimes(main, 1000, 1000);
    await utimes(buildInfo, 3000, 3000);
    assert.equal(buildIsCurrent(root), true, 'built after the last edit, which left main.js as it was');
    await utimes(source, 4000, 4000);
    assert.equal(buildIsCurrent(root), false, 'a source file edited after the build');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
