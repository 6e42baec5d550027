// The image's own layer, staged as a directory tree and packed into a reproducible tarball (same inputs, same bytes,
// so its digest says whether an image must be rebuilt):
// - /usr/local/bin/node: the Node runtime the build runs on (the host's, e.g. NodeSource's Node 20);
// - /usr/lib/amesh: the built package as `npm run build` leaves it, what runs: package.json, bin/, dist/bundle (the
//   bundle's JavaScript, without its source maps, which lead to sources the image does not hold), the native addon
//   and the packages the bundle loads from node_modules (RUNTIME_PACKAGES, with their dependencies);
// - /usr/local/bin/amesh: bin/amesh, the CLI with its data-path Node flags;
// - /usr/lib/amesh/dist/cni-plugin: the CNI plugin as one module, which the node agent installs into the host's CNI
//   bin dir with this Node beside it (src/cni/install/plugin-files.ts), as Istio's install-cni copies istio-cni.
import { chmodSync, cpSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { packageClosure } from './package-closure.mjs';

/**
 * The packages the bundle loads at run time instead of containing them: lmdb (scripts/finish-build.mjs `external`)
 * and prom-client, whose metric classes src/ztunnel/admin/prom-client-core.ts requires by path.
 */
const RUNTIME_PACKAGES = ['lmdb', 'prom-client'];

const NATIVE_ADDON = 'native/build/Release/amesh_native.node';
/** The plugin module the node agent installs (scripts/finish-build.mjs). */
const CNI_PLUGIN = 'dist/cni-plugin/amesh-cni.mjs';

/** Copies `from` (a file or a tree, following symlinks such as a linked node_modules) to `to`. */
function copy(from, to, filter = () => true) {
  mkdirSync(path.dirname(to), { recursive: true });
  cpSync(from, to, { recursive: true, dereference: true, filter });
}

/**
 * Stages the layer's tree in `stage` from the built package at `root`, running on `nodeBinary`.
 * Returns the ELF files to check for their shared libraries, as `[path in the image, path in stage]` pairs.
 */
export function stageAmeshLayer(root, stage, nodeBinary) {
  const lib = path.join(stage, 'usr/lib/amesh');
  copy(path.join(root, 'package.json'), path.join(lib, 'package.json'));
  for (const bin of ['amesh', 'amesh-cni']) copy(path.join(root, 'bin', bin), path.join(lib, 'bin', bin));
  for (const f of readdirSync(path.join(root, 'dist/bundle')).filter((f) => f.endsWith('.js')))
    copy(path.join(root, 'dist/bundle', f), path.join(lib, 'dist/bundle', f));
  copy(path.join(root, CNI_PLUGIN), path.join(lib, CNI_PLUGIN));
  copy(path.join(root, NATIVE_ADDON), path.join(lib, NATIVE_ADDON));
  for (const pkg of packageClosure(root, RUNTIME_PACKAGES)) {
    const nested = path.join(root, pkg, 'node_modules');
    // A package's own node_modules holds packages of the closure, each copied on its own (or build-time ones).
    copy(path.join(root, pkg), path.join(lib, pkg), (src) => src !== nested);
  }

  const node = path.join(stage, 'usr/local/bin/node');
  copy(nodeBinary, node);
  chmodSync(node, 0o755);
  symlinkSync('../../lib/amesh/bin/amesh', path.join(stage, 'usr/local/bin/amesh'));

  return [
    ['/usr/local/bin/node', node],
    [`/usr/lib/amesh/${NATIVE_ADDON}`, path.join(lib, NATIVE_ADDON)],
  ];
}

/** The tar options that make the same tree the same bytes: order, owners, times and headers fixed. */
export function reproducibleTarArgs(mtimeSeconds) {
  return [
    '--sort=name',
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    `--mtime=@${mtimeSeconds}`,
    '--format=posix',
    '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
  ];
}
