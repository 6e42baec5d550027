import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DATA_PATH_NODE_FLAGS } from '../lib/node-flags.js';
import { packageRoot } from '../lib/package-root.js';
import { ameshCommand, ameshEntry } from './amesh-command.js';

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
    new RegExp(`^exec node ${DATA_PATH_NODE_FLAGS.join(' ')} "\\$here/\\.\\./dist/bundle/amesh\\.js" "\\$@"$`, 'm'),
  );
});

test('from a source tree, amesh runs the bundle while it is current, else the build while that is, else the source through tsx; installed, the bundle', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'amesh-build-current-'));
  const at = (...p: string[]): string => path.join(root, ...p);
  const write = async (file: string, time: number): Promise<void> => {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, '');
    await utimes(file, time, time);
  };
  try {
    await write(at('src', 'cli', 'main.ts'), 1000);
    await write(at('src', 'lib', 'ip.ts'), 2000);
    assert.equal(ameshEntry(root).at(-1), at('src', 'cli', 'main.ts'), 'no build');
    await write(at('dist', 'src', 'cli', 'main.js'), 1500);
    assert.equal(ameshEntry(root).at(-1), at('src', 'cli', 'main.ts'), 'a source file with no compiled file');
    await write(at('dist', 'src', 'lib', 'ip.js'), 3000);
    assert.deepEqual(ameshEntry(root), [at('dist', 'src', 'cli', 'main.js')], 'built, not bundled');
    await write(at('dist', 'bundle', 'amesh.js'), 4000);
    assert.deepEqual(ameshEntry(root), [at('dist', 'bundle', 'amesh.js')], 'bundled after the build');
    await utimes(at('dist', 'src', 'lib', 'ip.js'), 5000, 5000);
    assert.deepEqual(ameshEntry(root), [at('dist', 'src', 'cli', 'main.js')], 'built again, not bundled again');
    await write(at('dist', '.tsbuildinfo'), 6000);
    await utimes(at('src', 'lib', 'ip.ts'), 6000, 6000);
    assert.deepEqual(
      ameshEntry(root),
      ['--import', 'tsx', at('src', 'cli', 'main.ts')],
      'a source file edited after its compiled file, whatever the build info says',
    );
    await rm(at('src'), { recursive: true });
    assert.deepEqual(ameshEntry(root), [at('dist', 'bundle', 'amesh.js')], 'installed without sources');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
