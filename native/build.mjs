#!/usr/bin/env node
// Builds the addon (native/build/Release/amesh_native.node) with node-gyp; the root package's `install` script,
// so `npm ci` runs it. node-gyp downloads Node's headers unless told where they are, and nothing may be
// downloaded here: use npm's `nodedir` when set (npm_config_nodedir), else the headers that come with this Node
// (<prefix>/include/node, as NodeSource's nodejs package has them).
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const nodedir = process.env.npm_config_nodedir || path.resolve(process.execPath, '../..');
if (!existsSync(path.join(nodedir, 'include/node/node_api.h'))) {
  console.error(
    `amesh native: no Node headers at ${nodedir}/include/node; use a Node.js build that has them, or set npm_config_nodedir to a directory with include/node`,
  );
  process.exit(1);
}
const nodeGyp = createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js');
const r = spawnSync(process.execPath, [nodeGyp, 'rebuild', `--nodedir=${nodedir}`, '--directory', here], {
  stdio: 'inherit',
});
process.exit(r.status ?? 1);
