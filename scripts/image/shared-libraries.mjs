// What the image's ELF files (the Node binary, the native addon) load from the system, checked against the base
// before an image is made: the copied Node was built for the host, and a library the base lacks would only show as
// a process that cannot start. ldd (libc-bin) lists what each one needs as the host resolves it.
import { spawnSync } from 'node:child_process';
import path from 'node:path';

/** The shared-object names `file` needs (ldd's `name => path` and the loader's own line), vdso left out. */
export function neededLibraries(file) {
  const r = spawnSync('ldd', [file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ldd ${file} failed: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0])
    .filter((name) => name !== undefined && name !== '' && !name.startsWith('linux-vdso'))
    .map((name) => path.basename(name));
}

/**
 * The libraries of `files` (`[imagePath, hostPath]` pairs) that no file of the base (`baseFiles`, its paths) provides
 * by name, as `imagePath: library` strings.
 */
export function missingLibraries(files, baseFiles) {
  const provided = new Set(baseFiles.map((f) => path.basename(f)));
  return files.flatMap(([imagePath, hostPath]) =>
    neededLibraries(hostPath)
      .filter((lib) => !provided.has(lib))
      .map((lib) => `${imagePath}: ${lib}`),
  );
}
