import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DATA_PATH_NODE_FLAGS } from '../lib/node-flags.js';
import { ameshCommand } from './amesh-command.js';

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
