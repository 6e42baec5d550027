/**
 * The node's CNI network config files as the container runtime reads them (containernetworking/cni libcni/conf.go
 * ConfFiles, ConfListFromBytes, ConfFromBytes), and as Istio's installer picks the primary one among them (istio
 * cni/pkg/install/cniconfig.go getConfigFilenames): the `.conf` and `.conflist` files of the directory, sorted by
 * name, skipping any the runtime could not load (a warning each); the first is the network pods get.
 */
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { MeshError, describeError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { isRecord } from '../../lib/record.js';

/** A decoded network config file: a list (`.conflist`) or a single network (`.conf`). */
export type NetworkConfigFile =
  | { readonly kind: 'list'; readonly config: Record<string, unknown>; readonly plugins: Record<string, unknown>[] }
  | { readonly kind: 'single'; readonly config: Record<string, unknown> };

const invalid = (file: string, problem: string): MeshError =>
  new MeshError('AGENT_ERR_CNI_CONFIG', `${file}: ${problem}`);

const isType = (v: unknown): boolean => typeof v === 'string' && v !== '';

/**
 * Decodes `text` (the file `file`, named in errors) as libcni would: a list when the name ends in `.conflist`, a
 * single network otherwise. Throws AGENT_ERR_CNI_CONFIG saying what is wrong.
 */
export function parseNetworkConfigFile(text: string, file: string): NetworkConfigFile {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw invalid(file, `is not JSON: ${(e as Error).message}`);
  }
  if (!isRecord(v)) throw invalid(file, 'is not a JSON object');
  if (!file.endsWith('.conflist')) {
    if (!isType(v['type'])) throw invalid(file, 'has no "type" (a .conf holds one network; is this a .conflist?)');
    return { kind: 'single', config: v };
  }
  if (typeof v['name'] !== 'string') throw invalid(file, 'has no "name"');
  const plugins = v['plugins'];
  if (!Array.isArray(plugins) || plugins.length === 0) throw invalid(file, 'has no "plugins" list');
  plugins.forEach((p: unknown, i) => {
    if (!isRecord(p) || !isType(p['type'])) throw invalid(file, `plugins[${String(i)}] has no "type"`);
  });
  return { kind: 'list', config: v, plugins: plugins as Record<string, unknown>[] };
}

/** The names of the loadable network config files in `dir`, sorted (the first is the primary); none when it is missing. */
export async function networkConfigFiles(dir: string, log: Logger): Promise<string[]> {
  let names: string[];
  try {
    const dirents = await readdir(dir, { withFileTypes: true });
    names = dirents
      .filter((d) => !d.isDirectory() && ['.conf', '.conflist'].includes(path.extname(d.name)))
      .map((d) => d.name);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new MeshError('AGENT_ERR_CNI_INSTALL', `cannot list the CNI config directory ${dir}: ${describeError(e)}`, {
      cause: e,
    });
  }
  const valid: string[] = [];
  for (const name of names.sort()) {
    const file = path.join(dir, name);
    try {
      parseNetworkConfigFile(await readFile(file, 'utf8'), file);
      valid.push(name);
    } catch (e) {
      log.warn({ file, error: describeError(e) }, 'skipping a CNI config file the runtime cannot load');
    }
  }
  return valid;
}
