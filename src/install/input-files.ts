/**
 * The `-f` files of manifest generate, install and uninstall, read as istioctl reads them: a flag may list several
 * comma-separated names (cobra's StringSlice), `-` is stdin and only allowed last.
 */
import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { MeshError } from '../lib/errors.js';
import type { InputFile } from './istio-operator.js';

/** The file names of repeated `-f` flags, commas split. */
export function fileNames(flags: readonly string[]): string[] {
  return flags
    .flatMap((f) => f.split(','))
    .map((f) => f.trim())
    .filter((f) => f !== '');
}

export async function readInputFiles(
  names: readonly string[],
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<InputFile[]> {
  const out: InputFile[] = [];
  for (const [i, name] of names.entries()) {
    if (name === '-' && i !== names.length - 1)
      throw new MeshError('INSTALL_ERR_FILE', 'stdin is only allowed as the last filename');
    try {
      out.push({ name, text: name === '-' ? await text(stdin) : await readFile(name, 'utf8') });
    } catch (e) {
      throw new MeshError('INSTALL_ERR_FILE', `cannot read ${name === '-' ? 'stdin' : name}: ${(e as Error).message}`, {
        cause: e,
      });
    }
  }
  return out;
}
