#!/usr/bin/env node
// `npm run image`: builds the OCI image amesh:<version> that istiod, the node agent and ztunnel all run from
// (docs/image.md), into the local containers storage (podman's), with Debian's tools only: mmdebstrap makes the
// base (scripts/image/debian-base.mjs, cached), buildah assembles it. Two layers: the Debian base (its own image,
// amesh-base:<suite>-<key>, shared by every build on the same base) and amesh's (scripts/image/amesh-layer.mjs).
// There is no ENTRYPOINT: Kubernetes manifests give `command` and `args` (the default command is `amesh --help`).
//
// The name: --image REF (or AMESH_IMAGE), else [HUB/]amesh:TAG with --hub (AMESH_HUB) and --tag (AMESH_TAG,
// default the package's version). An image of that name built from the same inputs (base, layer bytes, labels) is
// kept as it is. Progress goes to stderr; the image ID is the one line on stdout. Interrupted (Ctrl-C, SIGTERM) or
// failed, it removes its working container and staging directory.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { URL, fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BASE, baseKey, baseTarball } from './image/debian-base.mjs';
import { CommandFailed, commandRunner, requireTools } from './image/commands.mjs';
import { reproducibleTarArgs, stageAmeshLayer } from './image/amesh-layer.mjs';
import { missingLibraries } from './image/shared-libraries.mjs';

const USAGE = `usage: npm run image -- [--image REF | --hub HUB --tag TAG] [--source URL] [--refresh-base]
  --image REF      the image's full name (env AMESH_IMAGE), e.g. registry.example.com/mesh/amesh:1.2.3
  --hub HUB        registry and path to name it under (env AMESH_HUB): HUB/amesh:TAG
  --tag TAG        its tag (env AMESH_TAG; default the package.json version)
  --source URL     org.opencontainers.image.source (env AMESH_IMAGE_SOURCE; default package.json repository)
  --refresh-base   make the Debian base anew (e.g. for Debian's security updates) instead of the cached one`;

/** The label that records what an image was built from, so that an unchanged build is not made again. */
const INPUTS_LABEL = 'amesh.image.inputs';

const root = fileURLToPath(new URL('..', import.meta.url));
const progress = (line) => process.stderr.write(`image: ${line}\n`);

class Interrupted extends Error {}
const abort = new AbortController();
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'])
  process.on(sig, () => abort.abort(new Interrupted(`interrupted (${sig}): removing what the build made`)));
const run = commandRunner(abort.signal);

/** Runs git in the checkout; undefined when it fails (no git, not a checkout). */
function git(...args) {
  const r = spawnSync('git', args, { cwd: root, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

function options() {
  const { values } = parseArgs({
    options: {
      image: { type: 'string' },
      hub: { type: 'string' },
      tag: { type: 'string' },
      source: { type: 'string' },
      'refresh-base': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  if (pkg.name !== 'amesh') throw new Error(`run it in the amesh checkout (${root} holds ${pkg.name ?? 'no package'})`);
  const env = process.env;
  const hub = values.hub ?? env.AMESH_HUB;
  const named = `${hub ? `${hub.replace(/\/+$/, '')}/` : ''}amesh:${values.tag ?? env.AMESH_TAG ?? pkg.version}`;
  // A flag wins over any variable: --hub or --tag over AMESH_IMAGE too.
  const image = values.image ?? ((values.hub ?? values.tag) ? named : (env.AMESH_IMAGE ?? named));
  const repository = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url;
  return {
    pkg,
    image,
    source: values.source ?? env.AMESH_IMAGE_SOURCE ?? repository,
    refreshBase: values['refresh-base'],
  };
}

/** Fails unless `npm run build` has run since the sources last changed: the image takes the build as it is. */
async function requireCurrentBuild() {
  const built = path.join(root, 'dist/src/up/amesh-command.js');
  if (existsSync(built)) {
    const { buildIsCurrent, bundleIsCurrent } = await import(built);
    if (buildIsCurrent(root) && bundleIsCurrent(root)) return;
  }
  throw new Error('the build is missing or older than the sources: run `npm run build` first');
}

function sha256File(file) {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(file)
      .on('data', (d) => h.update(d))
      .once('error', reject)
      .once('end', () => resolve(h.digest('hex')));
  });
}

/** The ID and labels of the image `name` in local storage, or undefined when there is none. */
async function inspectImage(name) {
  let out;
  try {
    out = await run('buildah', ['inspect', '--type', 'image', name]);
  } catch (e) {
    if (e instanceof CommandFailed) return undefined;
    throw e;
  }
  const image = JSON.parse(out);
  return { id: image.FromImageID, labels: image.OCIv1?.config?.Labels ?? {} };
}

/** Working containers made so far and not committed, removed when the build ends. */
const containers = new Set();

/** A working container from `from`; `build` adds to it; committed as `name` (unless `build` fails) and removed. */
async function commitContainer(from, name, timestamp, build) {
  const ctr = (await run('buildah', ['from', '--pull=never', '--quiet', from])).trim();
  containers.add(ctr);
  await build(ctr);
  await run('buildah', ['commit', '--quiet', '--rm', '--timestamp', String(timestamp), ctr, name]);
  containers.delete(ctr);
}

async function main() {
  const o = options();
  requireTools(['mmdebstrap', 'buildah', 'tar']);
  await requireCurrentBuild();
  const epoch = Number(process.env.SOURCE_DATE_EPOCH ?? git('log', '-1', '--format=%ct') ?? 0);
  if (!Number.isInteger(epoch) || epoch < 0) throw new Error('SOURCE_DATE_EPOCH must be a number of seconds');

  progress(`[1/4] the Debian ${BASE.suite} base (${BASE.variant} + ${BASE.packages.join(', ')})`);
  const tarball = await baseTarball({ refresh: o.refreshBase, run, progress });

  progress('[2/4] the amesh layer: the built package, Node and the host-side CNI plugin');
  const stage = mkdtempSync(path.join(os.tmpdir(), 'amesh-image-'));
  try {
    const elfFiles = stageAmeshLayer(root, stage, realpathSync(process.execPath));
    const baseFiles = (await run('tar', ['-tf', tarball])).split('\n');
    const missing = missingLibraries(elfFiles, baseFiles);
    if (missing.length > 0)
      throw new Error(
        `the base lacks shared libraries that would be loaded: ${missing.join(', ')}; add their Debian packages to BASE.packages (scripts/image/debian-base.mjs)`,
      );
    const layer = path.join(stage, '..', `${path.basename(stage)}.tar`);
    try {
      await run('tar', ['-C', stage, ...reproducibleTarArgs(epoch), '-cf', layer, '.']);
      const revision = git('describe', '--always', '--dirty', '--abbrev=40');
      const labels = {
        'org.opencontainers.image.title': 'amesh',
        'org.opencontainers.image.description': o.pkg.description,
        'org.opencontainers.image.version': o.pkg.version,
        'org.opencontainers.image.licenses': o.pkg.license,
        'org.opencontainers.image.created': new Date(epoch * 1000).toISOString(),
        ...(revision === undefined ? {} : { 'org.opencontainers.image.revision': revision }),
        ...(o.source === undefined ? {} : { 'org.opencontainers.image.source': o.source }),
      };
      const inputs = createHash('sha256')
        .update(JSON.stringify({ base: baseKey(), layer: await sha256File(layer), labels }))
        .digest('hex');

      progress(`[3/4] ${o.image}`);
      const previous = await inspectImage(o.image);
      if (previous?.labels[INPUTS_LABEL] === inputs) {
        progress(`${o.image} is up to date (built from the same base, layer and labels)`);
        console.log(previous.id);
        return;
      }
      const baseImage = `localhost/amesh-base:${BASE.suite}-${baseKey()}`;
      if (o.refreshBase || (await inspectImage(baseImage)) === undefined) {
        progress(`  the base image ${baseImage}, from ${tarball}`);
        await commitContainer('scratch', baseImage, epoch, (ctr) =>
          run('buildah', ['add', '--quiet', ctr, tarball, '/']),
        );
      }
      progress(`  adding the amesh layer to ${baseImage}`);
      await commitContainer(baseImage, o.image, epoch, async (ctr) => {
        await run('buildah', ['add', '--quiet', ctr, layer, '/']);
        await run('buildah', [
          'config',
          '--env',
          'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
          '--entrypoint',
          '[]',
          '--cmd',
          '["amesh", "--help"]',
          ...Object.entries({ ...labels, [INPUTS_LABEL]: inputs }).flatMap(([k, v]) => ['--label', `${k}=${v}`]),
          ctr,
        ]);
      });
      const { id } = await inspectImage(o.image);
      // The image this name had before is dropped if nothing else names or uses it.
      if (previous !== undefined && previous.id !== id) spawnSync('buildah', ['rmi', previous.id], { stdio: 'ignore' });
      progress(
        `[4/4] built ${o.image} (${id.slice(0, 12)}); run it with podman, e.g. podman run --rm ${o.image} amesh version`,
      );
      console.log(id);
    } finally {
      rmSync(layer, { force: true });
    }
  } finally {
    rmSync(stage, { recursive: true, force: true });
    for (const ctr of containers) spawnSync('buildah', ['rm', ctr], { stdio: 'ignore' });
  }
}

try {
  await main();
} catch (e) {
  process.stderr.write(`image: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = e instanceof Interrupted ? 130 : 1;
}
