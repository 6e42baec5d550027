/**
 * Writes a volume's files so that a reader never sees half of an update, in the layout kubelet's AtomicWriter
 * gives configMap, secret, downwardAPI and projected volumes (kubernetes pkg/volume/util/atomic_writer.go): the
 * files live in a timestamped directory `..<time>`, `..data` is a symlink to the current one, and each top-level
 * name is a symlink through `..data`. An update writes a new directory and renames a new `..data` link over the
 * old one (one atomic step), then removes what the new payload no longer has. Programs that watch these files
 * (istiod its mesh config, a client its token) see the change as Kubernetes makes it.
 */
import { mkdir, readFile, readdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** A file of the payload: its bytes and mode. */
export interface PayloadFile {
  readonly data: Buffer;
  readonly mode: number;
}

const DATA_LINK = '..data';

/** kubelet's directory names: `..` and a timestamp with nanoseconds. */
function timestampDir(now: Date): string {
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  return `..${String(now.getUTCFullYear())}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}.${p(now.getUTCMilliseconds(), 3)}${String(process.hrtime.bigint() % 1_000_000n).padStart(6, '0')}`;
}

/** Whether the payload in `current` is `files` already (same names and bytes). */
async function samePayload(current: string, files: ReadonlyMap<string, PayloadFile>): Promise<boolean> {
  const listed = await readdir(current, { recursive: true, withFileTypes: true }).catch(() => undefined);
  if (listed === undefined) return false;
  const names = listed.filter((e) => e.isFile()).map((e) => path.relative(current, path.join(e.parentPath, e.name)));
  if (names.length !== files.size) return false;
  for (const n of names) {
    const want = files.get(n);
    if (want === undefined || !want.data.equals(await readFile(path.join(current, n)))) return false;
  }
  return true;
}

/**
 * Makes `dir` hold exactly `files` (relative paths; nested ones make directories). Returns whether anything
 * changed.
 */
export async function writePayload(
  dir: string,
  files: ReadonlyMap<string, PayloadFile>,
  now = new Date(),
): Promise<boolean> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const old = await readlink(path.join(dir, DATA_LINK)).catch(() => undefined);
  if (old !== undefined && (await samePayload(path.join(dir, old), files))) return false;

  const ts = timestampDir(now);
  for (const [name, f] of files) {
    const file = path.join(dir, ts, name);
    await mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
    await writeFile(file, f.data, { mode: f.mode });
  }
  await mkdir(path.join(dir, ts), { recursive: true, mode: 0o755 });
  const tmpLink = path.join(dir, `${DATA_LINK}_tmp`);
  await rm(tmpLink, { force: true });
  await symlink(ts, tmpLink);
  await rename(tmpLink, path.join(dir, DATA_LINK));

  const top = new Set([...files.keys()].map((n) => n.split('/')[0]!));
  for (const name of top) {
    const link = path.join(dir, name);
    const target = path.join(DATA_LINK, name);
    if ((await readlink(link).catch(() => undefined)) !== target) {
      await rm(link, { force: true, recursive: true });
      await symlink(target, link);
    }
  }
  for (const e of await readdir(dir)) {
    if (e === DATA_LINK || e === ts || top.has(e)) continue;
    await rm(path.join(dir, e), { recursive: true, force: true });
  }
  return true;
}
