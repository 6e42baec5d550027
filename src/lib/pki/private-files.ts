import { chmod, mkdir, stat, writeFile } from 'node:fs/promises';
import { MeshError, type ErrorCode } from '../errors.js';

/** Private keys: readable by their owner only. */
const PRIVATE_KEY_MODE = 0o600;
/** Directories holding private keys: usable by their owner only. */
export const PRIVATE_DIR_MODE = 0o700;

/**
 * Creates `file` (never replacing one) with `data`, mode 0600. The explicit chmod makes the mode exact whatever the
 * umask; `wx` makes a concurrent or earlier writer an EEXIST instead of a silent overwrite.
 */
export async function writeNewPrivateFile(file: string, data: string): Promise<void> {
  await writeFile(file, data, { mode: PRIVATE_KEY_MODE, flag: 'wx' });
  await chmod(file, PRIVATE_KEY_MODE);
}

/**
 * Creates `dir` (mode 0700) if it is missing, and refuses one that group or others may use: it holds private keys,
 * and a key others could already read must be treated as leaked, which only the operator can decide. This is what
 * OpenSSH does with loose key permissions; silently tightening a directory the operator chose could also break
 * whatever else relies on it.
 */
export async function ensurePrivateDir(dir: string, code: ErrorCode, what: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  } catch (e) {
    throw new MeshError(code, `cannot create ${what} ${dir}: ${(e as Error).message}`);
  }
  const st = await stat(dir);
  if (!st.isDirectory()) throw new MeshError(code, `${what} ${dir} is not a directory`);
  if ((st.mode & 0o077) !== 0) {
    throw new MeshError(
      code,
      `${what} ${dir} has mode ${(st.mode & 0o777).toString(8)}, but it holds private keys and must be accessible by its owner only: run "chmod 700 ${dir}" (and check whether its keys were exposed)`,
    );
  }
}
