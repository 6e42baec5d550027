#!/usr/bin/env node
// What `npm run build` does after `tsc --build` succeeded:
//
// 1. Every compiled file older than its source is stamped with the time now. tsc leaves an output alone when what
//    it would write is unchanged (a source only touched, or changed in its types only), and those outputs would
//    otherwise look stale to whatever judges the build by file times (src/up/amesh-command.ts, run-tests.mjs).
//    After a build that succeeded, every output is current.
//
// 2. The compiled CLI and the CNI plugin are bundled into dist/bundle/amesh.js and dist/bundle/amesh-cni.js, with
//    esbuild, so that `amesh` and `amesh-cni` start from a few files instead of about 1,500: loading
//    @kubernetes/client-node module by module costs a process over a second of CPU, and amesh starts many processes
//    (a cluster's daemons, a plugin run per pod, the tests' components). Each command's modules stay a chunk of their
//    own, loaded only when the command runs, so `amesh ztunnel` still loads no control-plane code. The inputs are
//    tsc's JavaScript, not the TypeScript sources: the bundle runs exactly what was type-checked and compiled, and
//    its source maps lead back through tsc's to the TypeScript. The native addon and lmdb (which loads its own native
//    binding) stay outside, found from the package root at run time.
//
// 3. The CNI plugin once more, as one file with nothing outside it (dist/cni-plugin/amesh-cni.mjs): the node agent
//    installs it on the host with a Node.js runtime beside it (src/cni/install/plugin-files.ts), where there is no
//    package to load chunks or dependencies from. The plugin uses neither the native addon nor lmdb.
import { existsSync, statSync, utimesSync } from 'node:fs';
import { build } from 'esbuild';
import { bundleIsCurrent, compiledFiles } from '../dist/src/up/amesh-command.js';
import { PLUGIN_BUNDLE } from '../dist/src/cni/install/plugin-files.js';

const now = new Date();
for (const { source, out } of compiledFiles('.', ['src', 'test', 'bench']))
  if (existsSync(out) && statSync(out).mtimeMs < statSync(source).mtimeMs) utimesSync(out, now, now);

// CommonJS dependencies call require(); an ES module has none of its own.
const requireBanner = {
  js: "import { createRequire as __ameshRequire } from 'node:module'; const require = __ameshRequire(import.meta.url);",
};

// After a build that changed nothing, the bundles are already made from what tsc wrote.
if (!bundleIsCurrent('.'))
  await build({
    entryPoints: { amesh: 'dist/src/cli/main.js', 'amesh-cni': 'dist/src/cni/plugin/main.js' },
    outdir: 'dist/bundle',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    external: ['lmdb', '*.node'],
    banner: requireBanner,
    logLevel: 'warning',
  });
if (!bundleIsCurrent('.', PLUGIN_BUNDLE))
  await build({
    entryPoints: ['dist/src/cni/plugin/main.js'],
    outfile: PLUGIN_BUNDLE,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    banner: requireBanner,
    logLevel: 'warning',
  });
