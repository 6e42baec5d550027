/**
 * Replacing a file in one step: the new contents go to `<file>.tmp.<pid>` in the same directory, get their mode,
 * and are renamed over the file, so a reader (a container runtime loading a CNI config, a plugin reading its
 * kubeconfig) sees the old file or the new one, never half of one. The temporary name keeps the file's extension
 * out of the end of the name, so nothing that lists `*.conflist` picks it up (istio pkg/file AtomicWrite and
 * AtomicCopy do the same).
 */
import { chmod, copyFile, rename, rm, writeFile } from 'node:fs/promises';

export const atomicTempFile = (file: string): string => `${file}.tmp.${String(process.pid)}`;

async function replaceWith(file: string, mode: number, fill: (tmp: string) => Promise<void>): Promise<void> {
  const tmp = atomicTempFile(file);
  try {
    await fill(tmp);
    await chmod(tmp, mode);
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw e;
  }
}

export function writeFileAtomic(file: string, data: string | Buffer, mode: number): Promise<void> {
  return replaceWith(file, mode, (tmp) => writeFile(tmp, data, { mode }));
}

export function copyFileAtomic(source: string, file: string, mode: number): Promise<void> {
  return replaceWith(file, mode, (tmp) => copyFile(source, tmp));
}
