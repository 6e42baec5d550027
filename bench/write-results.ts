import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Writes one section's figures to bench/results/<prefix>-<date>.json (from dist/ too) and returns the file. */
export async function writeResults(prefix: string, data: object): Promise<string> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const outDir = path.resolve(here, here.includes(`${path.sep}dist${path.sep}`) ? '../../bench/results' : 'results');
  await mkdir(outDir, { recursive: true });
  const date = new Date().toISOString();
  const file = path.join(outDir, `${prefix}-${date.replace(/[:.]/g, '-')}.json`);
  await writeFile(file, JSON.stringify({ date, node: process.version, ...data }, null, 2));
  return file;
}
