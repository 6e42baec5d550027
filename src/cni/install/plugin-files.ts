/**
 * The plugin executable in the host's CNI bin dir (istio cni/pkg/install/binaries.go copyBinaries). The container
 * runtime runs the plugin on the host, where neither Node.js nor amesh's package is, so what is installed carries
 * its own runtime:
 *
 *   <bin dir>/amesh-cni                  a /bin/sh launcher, the name the network config's `type` finds
 *   <bin dir>/amesh-cni.d/node           the Node.js runtime the agent runs on (process.execPath)
 *   <bin dir>/amesh-cni.d/amesh-cni.mjs  the plugin as one self-contained ES module (no imports outside Node's own
 *                                        modules, no native addon), which `npm run build` makes
 *
 * Why not one file, as Istio's Go binary is: a Node single executable application is a copy of the node binary
 * with the script injected as an ELF note, which takes `postject` (not one of our dependencies; Node 20 cannot
 * inject by itself) and, on Node 20, a CommonJS script. It would be the same runtime, as large, in one file
 * instead of two. The launcher needs only the host's /bin/sh and finds the runtime from its own path ($0), so it
 * runs with any PATH; the runtime needs the glibc and libstdc++ Node's official Linux build needs.
 *
 * Each file is written to a temporary name and renamed into place (runtime and module first, launcher last), so a
 * runtime starting the plugin meanwhile runs the old one or the new one. A file that is already there with the
 * same bytes and mode is left alone; once checked, it is not hashed again until its inode, size or time changes.
 */
import { createHash } from 'node:crypto';
import { createReadStream, type Stats } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { atomicTempFile, copyFileAtomic, writeFileAtomic } from '../../lib/atomic-file.js';
import { MeshError, describeError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { PLUGIN_TYPE } from './plugin-chain.js';
import type { WatchedPath } from './path-watch.js';

/** Where `npm run build` (scripts/finish-build.mjs) writes the self-contained plugin, from the package root. */
export const PLUGIN_BUNDLE = path.join('dist', 'cni-plugin', 'amesh-cni.mjs');

/** What the installer copies from: the plugin module and the Node.js runtime to run it with. */
export interface PluginSource {
  readonly bundle: string;
  readonly runtime: string;
}

const PRIVATE_DIR = `${PLUGIN_TYPE}.d`;
const RUNTIME_NAME = 'node';
const MODULE_NAME = `${PLUGIN_TYPE}.mjs`;

const LAUNCHER = `#!/bin/sh
# ${PLUGIN_TYPE}: amesh's CNI plugin, installed here by amesh cni-agent. It runs the plugin with the Node.js runtime
# installed beside it, found from this script's own path, so it needs nothing on PATH.
exec "\${0%/*}/${PRIVATE_DIR}/${RUNTIME_NAME}" "\${0%/*}/${PRIVATE_DIR}/${MODULE_NAME}" "$@"
`;

interface InstalledFile {
  readonly file: string;
  readonly mode: number;
  /** A file to copy, or the bytes to write. */
  readonly from: { readonly source: string } | { readonly data: Buffer };
}

/** What identifies a version of a file without reading it. */
const statKey = (s: { dev: number; ino: number; size: number; mtimeMs: number }): string =>
  `${String(s.dev)}:${String(s.ino)}:${String(s.size)}:${String(s.mtimeMs)}`;

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

async function digest(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

const installError = (what: string, e: unknown): MeshError =>
  new MeshError('AGENT_ERR_CNI_INSTALL', `${what}: ${describeError(e)}`, { cause: e });

export class PluginFiles {
  readonly launcher: string;
  private readonly privateDir: string;
  private readonly files: readonly InstalledFile[];
  /** File path → the stat key and digest it had when last read or written. */
  private readonly known = new Map<string, { key: string; digest: string }>();

  constructor(
    private readonly source: PluginSource,
    private readonly binDir: string,
    private readonly log: Logger,
  ) {
    this.launcher = path.join(binDir, PLUGIN_TYPE);
    this.privateDir = path.join(binDir, PRIVATE_DIR);
    this.files = [
      { file: path.join(this.privateDir, RUNTIME_NAME), mode: 0o755, from: { source: source.runtime } },
      { file: path.join(this.privateDir, MODULE_NAME), mode: 0o644, from: { source: source.bundle } },
      { file: this.launcher, mode: 0o755, from: { data: Buffer.from(LAUNCHER) } },
    ];
  }

  /** What to watch for someone else changing the installed files. */
  get watched(): WatchedPath[] {
    return [{ path: this.binDir, names: (n) => n === PLUGIN_TYPE || n === PRIVATE_DIR }, { path: this.privateDir }];
  }

  /** Puts every file in place that is missing or differs. Throws AGENT_ERR_CNI_INSTALL. */
  async install(): Promise<void> {
    for (const [name, file] of [
      ['plugin module', this.source.bundle],
      ['Node.js runtime', this.source.runtime],
    ] as const) {
      try {
        await stat(file);
      } catch (e) {
        throw installError(
          `the ${name} to install, ${file}, cannot be read (\`npm run build\` makes the module; AMESH_CNI_PLUGIN_BUNDLE and AMESH_CNI_PLUGIN_RUNTIME name others)`,
          e,
        );
      }
    }
    try {
      await mkdir(this.privateDir, { recursive: true, mode: 0o755 });
    } catch (e) {
      throw installError(`cannot create ${this.privateDir}`, e);
    }
    for (const f of this.files) {
      try {
        const want = 'source' in f.from ? await this.digestOf(f.from.source) : sha256(f.from.data);
        if (await this.current(f, want)) continue;
        await this.removeStaleTemps(f.file);
        if ('source' in f.from) await copyFileAtomic(f.from.source, f.file, f.mode);
        else await writeFileAtomic(f.file, f.from.data, f.mode);
        this.known.set(f.file, { key: statKey(await stat(f.file)), digest: want });
      } catch (e) {
        throw installError(`cannot install ${f.file}`, e);
      }
      this.log.info({ file: f.file }, 'copied the CNI plugin file');
    }
  }

  /** Removes every installed file. */
  async remove(): Promise<void> {
    await rm(this.launcher, { force: true });
    await rm(this.privateDir, { recursive: true, force: true });
    this.log.info({ file: this.launcher, dir: this.privateDir }, 'removed the CNI plugin');
  }

  /** Whether `f` is in place with the bytes of digest `want` and its mode. */
  private async current(f: InstalledFile, want: string): Promise<boolean> {
    const target = await stat(f.file).catch(() => undefined);
    if (target === undefined || !target.isFile() || (target.mode & 0o7777) !== f.mode) return false;
    return (await this.digestOf(f.file, target)) === want;
  }

  private async digestOf(file: string, known?: Stats): Promise<string> {
    const key = statKey(known ?? (await stat(file)));
    const cached = this.known.get(file);
    if (cached?.key === key) return cached.digest;
    const d = await digest(file);
    this.known.set(file, { key, digest: d });
    return d;
  }

  /** Temporary files a copy interrupted before left behind (istio binaries.go removes them the same way). */
  private async removeStaleTemps(file: string): Promise<void> {
    const prefix = atomicTempFile(file).replace(/\d+$/, '');
    const dir = path.dirname(file);
    for (const name of await readdir(dir)) {
      const stale = path.join(dir, name);
      if (stale.startsWith(prefix)) await rm(stale, { force: true });
    }
  }
}
