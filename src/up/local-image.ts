/**
 * The amesh image as `amesh up` runs it. Containers here run on the host's files (runc-runtime.ts), so no image is
 * pulled: a container of the amesh image, whatever its registry and tag (`<hub>/amesh:<tag>`, as `amesh install`
 * renders it from `values.global.hub` and `values.global.tag`), gets the build that `up` itself runs from, at the
 * path where the image keeps its CLI (docs/image.md). The manifests stay those of any cluster; only the kubelet
 * knows the mapping.
 */
import { writeFile } from 'node:fs/promises';
import { packageRoot } from '../lib/package-root.js';
import { ameshCommand } from './amesh-command.js';
import type { ContainerMount } from './oci-spec.js';

/** The image's `amesh` (docs/image.md), on the image's PATH. */
export const AMESH_IMAGE_CLI = '/usr/local/bin/amesh';

/** The repository's last path segment, which names the image whatever registry holds it. */
const IMAGE_NAME = 'amesh';

/** Whether `image` (`[registry/][path/]name[:tag][@digest]`) is the amesh image. */
export function isAmeshImage(image: string | undefined): boolean {
  if (image === undefined) return false;
  const repository = image.split('@')[0] ?? '';
  const name = repository.slice(repository.lastIndexOf('/') + 1);
  return name.split(':')[0] === IMAGE_NAME;
}

/** A POSIX shell word for `s`. */
const quoted = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * Writes to `file` the launcher a container of the amesh image runs as its `amesh`: this Node with the package's
 * entry point. A source tree run through tsx names the loader by path, since the container's working directory is
 * its own, and keeps no compile cache, since the image's containers may not write their root filesystem (istiod's
 * and ztunnel's charts make it read-only).
 */
export async function writeImageLauncher(file: string): Promise<void> {
  const { cmd, args } = ameshCommand();
  const tsx = args.some((a, i) => a === 'tsx' && args[i - 1] === '--import');
  const argv = [cmd, ...args.map((a, i) => (a === 'tsx' && args[i - 1] === '--import' ? import.meta.resolve(a) : a))];
  const env = tsx ? 'TSX_DISABLE_CACHE=1 ' : '';
  await writeFile(file, `#!/bin/sh\n${env}exec ${argv.map(quoted).join(' ')} "$@"\n`, { mode: 0o755 });
}

/**
 * The command and mounts that run container command `argv0` of `image` from the local build, or undefined when
 * it is not the amesh image's CLI. The build is mounted read-only at its own path too, to be mounted after the
 * pod's volumes: a volume over one of its parents (ztunnel's chart puts an emptyDir on /tmp) would hide it.
 */
export function localImageCommand(
  image: string | undefined,
  argv0: string | undefined,
  launcher: string,
  build = packageRoot(),
): { cmd: string; mounts: ContainerMount[] } | undefined {
  if (!isAmeshImage(image) || (argv0 !== 'amesh' && argv0 !== AMESH_IMAGE_CLI)) return undefined;
  return {
    cmd: AMESH_IMAGE_CLI,
    mounts: [
      { source: launcher, destination: AMESH_IMAGE_CLI, readOnly: true },
      { source: build, destination: build, readOnly: true },
    ],
  };
}
