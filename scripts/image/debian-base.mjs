// The image's base: a minimal Debian bookworm root filesystem made by mmdebstrap, cached as a tarball under
// ~/.cache/amesh/image (XDG_CACHE_HOME) keyed by everything that decides its contents, so a rebuild costs nothing.
// The `essential` variant (Essential: yes packages, no apt) plus what amesh's processes run or load:
// - libstdc++6 and libgcc-s1: the Node binary and the native addon link them (checked with ldd, shared-libraries.mjs);
// - iptables, iproute2 (`ip`), ipset: the node agent writes pods' and the host's rules with them
//   (src/cni/agent/iptables-rules.ts, pod-rules.ts, host-rules.ts); `nsenter` comes with util-linux, essential;
// - ca-certificates: the system's trust store, for tools and for Node started with --use-openssl-ca.
// Man pages, docs (but their copyright files) and translations are left out. The mirrors are Debian's, as this
// machine's apt sources name them (deb.debian.org for the release, its updates and security).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const BASE = Object.freeze({
  suite: 'bookworm',
  variant: 'essential',
  packages: ['ca-certificates', 'iproute2', 'ipset', 'iptables', 'libgcc-s1', 'libstdc++6'],
  mirrors: [
    'deb http://deb.debian.org/debian bookworm main',
    'deb http://deb.debian.org/debian bookworm-updates main',
    'deb http://deb.debian.org/debian-security bookworm-security main',
  ],
  dpkgOptions: [
    'path-exclude=/usr/share/man/*',
    'path-exclude=/usr/share/doc/*',
    'path-include=/usr/share/doc/*/copyright',
    'path-exclude=/usr/share/locale/*',
    'path-exclude=/usr/share/info/*',
  ],
});

const SYSTEM_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';

/** The cache key: a digest of the base's definition (a change to any of it makes another tarball). */
export function baseKey(base = BASE) {
  return createHash('sha256').update(JSON.stringify(base)).digest('hex').slice(0, 16);
}

/** Where cached tarballs live. */
export function cacheDir(env = process.env) {
  return path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'amesh', 'image');
}

const PARTIAL = '.partial-';

/**
 * Removes the partial tarballs of builds that are gone: one killed outright (SIGKILL) cannot remove its own, and its
 * mmdebstrap, in a process group of its own, may have finished writing it since.
 */
function removeOrphanedPartials(dir) {
  for (const f of readdirSync(dir)) {
    const at = f.lastIndexOf(PARTIAL);
    if (at < 0) continue;
    const pid = Number(f.slice(at + PARTIAL.length));
    if (Number.isInteger(pid) && pid > 0 && !existsSync(`/proc/${pid}`)) rmSync(path.join(dir, f), { force: true });
  }
}

/**
 * The base tarball's path, made with mmdebstrap first if it is not cached (or `refresh` asks for a new one, e.g. to
 * take Debian's security updates). `run` runs a command (commands.mjs); `progress` prints a line.
 */
export async function baseTarball({ refresh, run, progress }) {
  const dir = cacheDir();
  const tarball = path.join(dir, `debian-${BASE.suite}-${baseKey()}.tar`);
  if (existsSync(tarball) && !refresh) {
    progress(`Debian ${BASE.suite} base: cached (${tarball})`);
    return tarball;
  }
  mkdirSync(dir, { recursive: true });
  removeOrphanedPartials(dir);
  // Written aside and renamed when complete, so an interrupted or failed run never leaves a tarball that looks made.
  const partial = `${tarball}${PARTIAL}${process.pid}`;
  progress(`Debian ${BASE.suite} base: making it with mmdebstrap (a minute or more; cached afterwards in ${dir})`);
  try {
    await run(
      'mmdebstrap',
      [
        `--variant=${BASE.variant}`,
        // The output's name does not end in .tar while it is partial, so the format is named.
        '--format=tar',
        `--include=${BASE.packages.join(',')}`,
        ...BASE.dpkgOptions.map((o) => `--dpkgopt=${o}`),
        BASE.suite,
        partial,
        ...BASE.mirrors,
      ],
      {
        progress: (line) => line.startsWith('I: ') && progress(`  mmdebstrap: ${line.slice(3)}`),
        // Debian's own tools, whatever shims come first on the caller's PATH: mmdebstrap runs its filter with
        // `env python3` once per package, and a shim such as pyenv's costs it seconds per package.
        env: { ...process.env, PATH: SYSTEM_PATH },
      },
    );
    renameSync(partial, tarball);
  } finally {
    rmSync(partial, { force: true });
  }
  return tarball;
}
