import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DATA_PATH_NODE_FLAGS } from '../lib/node-flags.js';
import { packageRoot } from '../lib/package-root.js';
import { ameshCommand, buildIsCurrent } from './amesh-command.js';

test("every launcher of a ztunnel passes the data-path Node flags: ameshCommand, the bin shebang, npm run amesh, bin/amesh (amesh up's pods)", () => {
  assert.deepEqual(ameshCommand().args.slice(0, DATA_PATH_NODE_FLAGS.length), [...DATA_PATH_NODE_FLAGS]);
  const shebang = readFileSync(path.join(packageRoot(), 'src', 'cli', 'main.ts'), 'utf8').split('\n')[0]!;
  assert.equal(shebang, `#!/usr/bin/env -S node ${DATA_PATH_NODE_FLAGS.join(' ')}`);
  const pkg = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  assert.ok(pkg.scripts['amesh']!.startsWith(`node ${DATA_PATH_NODE_FLAGS.join(' ')} `), pkg.scripts['amesh']);
  const bin = readFileSync(path.join(packageRoot(), 'bin', 'amesh'), 'utf8');
  assert.match(
    bin,
    new RegExp(`^exec node ${DATA_PATH_NODE_FLAGS.join(' ')} "\\$here/\\.\\./dist/src/cli/main\\.js" "\\$@"$`, 'm'),
  );
});

test('from the source tree, amesh runs the build only while every source file is older than its compiled file', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'amesh-build-current-'));
  try {
    const main = path.join(root, 'dist', 'src', 'cli', 'main.js');
    const mainSource = path.join(root, 'src', 'cli', 'main.ts');
    const source = path.join(root, 'src', 'lib', 'ip.ts');
    const compiled = path.join(root, 'dist', 'src', 'lib', 'ip.js');
    for (const f of [main, mainSource, source, compiled]) await mkdir(path.dirname(f), { recursive: true });
    await writeFile(mainSource, '');
    await writeFile(source, '');
    await utimes(mainSource, 1000, 1000);
    await utimes(source, 2000, 2000);
    assert.equal(buildIsCurrent(root), false, 'no build');
    await writeFile(main, '');
    await utimes(main, 1500, 1500);
    assert.equal(buildIsCurrent(root), false, 'a source file with no compiled file');
    await writeFile(compiled, '');
    await utimes(compiled, 3000, 3000);
    assert.equal(buildIsCurrent(root), true, 'each compiled file written after its source');
    await writeFile(path.join(root, 'dist', '.tsbuildinfo'), '');
    await utimes(source, 4000, 4000);
    assert.equal(
      buildIsCurrent(root),
      false,
      'a source file edited after its compiled file, whatever the build info says',
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
