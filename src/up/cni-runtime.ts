/**
 * The container runtime's side of the CNI contract (containernetworking/cni SPEC.md, "Section 4: Plugin
 * Delegation" and "Section 5: Result Types"), as a kubelet's runtime runs it for each pod sandbox: the plugins of
 * a network configuration list run in order for ADD, each given the previous one's result as `prevResult`, and
 * in reverse order for DEL, each given the cached result of the ADD; CHECK runs in order with the cached result.
 * A plugin is found by its `type` in the plugin directories (CNI_PATH) and run with the CNI_* environment, its
 * config on stdin; a plugin that exits non-zero reports `{code, msg, details}` on stdout.
 *
 * Written here rather than taken from a library: the npm packages for CNI are for writing plugins, not for
 * running them, and `amesh up` must run each node's chain inside that node's network namespace (`nsenter`).
 */
import { access, constants, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { MeshError } from '../lib/errors.js';
import { asRecord } from '../lib/record.js';
import { runCommand } from './run-command.js';

/** What the plugins see of the runtime's network configuration list (SPEC.md "Network Configuration Lists"). */
export interface NetworkConfigList {
  readonly cniVersion: string;
  readonly name: string;
  readonly plugins: readonly Readonly<Record<string, unknown> & { type: string }>[];
}

/** The sandbox a chain runs for. */
export interface Attachment {
  readonly containerId: string;
  /** Path of the sandbox's network namespace, e.g. /run/netns/<name>. */
  readonly netns: string;
  readonly ifName: string;
  /** CNI_ARGS pairs, e.g. K8S_POD_NAMESPACE and K8S_POD_NAME, as a kubelet passes them. */
  readonly args?: Readonly<Record<string, string>>;
}

export interface CniRuntimeOptions {
  /** Where plugins are looked up, in order (CNI_PATH). */
  readonly pluginDirs: readonly string[];
  /** Where ADD results are kept for DEL and CHECK (SPEC.md: the runtime caches the result). */
  readonly cacheDir: string;
  /** Run plugins inside this network namespace (a node's), through nsenter. */
  readonly inNetns?: string;
}

type Command = 'ADD' | 'DEL' | 'CHECK';

/** Parses and checks a network configuration list: the fields every plugin relies on, with a clear error. */
export function parseNetworkConfigList(text: string, source: string): NetworkConfigList {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new MeshError('UP_ERR_CNI', `${source}: not JSON: ${(e as Error).message}`);
  }
  const o = asRecord(v);
  if (typeof o['cniVersion'] !== 'string' || o['cniVersion'] === '')
    throw new MeshError('UP_ERR_CNI', `${source}: cniVersion is required`);
  if (typeof o['name'] !== 'string' || o['name'] === '')
    throw new MeshError('UP_ERR_CNI', `${source}: name is required`);
  const plugins = o['plugins'];
  if (!Array.isArray(plugins) || plugins.length === 0)
    throw new MeshError('UP_ERR_CNI', `${source}: plugins must be a non-empty list`);
  plugins.forEach((p, i) => {
    if (typeof (p as { type?: unknown } | null)?.type !== 'string')
      throw new MeshError('UP_ERR_CNI', `${source}: plugins[${String(i)}].type is required`);
  });
  return Object.freeze({
    cniVersion: o['cniVersion'],
    name: o['name'],
    plugins: plugins as NetworkConfigList['plugins'],
  });
}

/** The file extensions libcni reads as network configuration (libcni/conf.go ConfFiles). */
const CONF_EXTENSIONS = ['.conf', '.conflist', '.json'];

/** Each absolute path among the string values of `v`, at any depth, replaced by `resolve`'s answer. */
function resolvePaths(v: unknown, resolve: (p: string) => string): unknown {
  if (typeof v === 'string') return v.startsWith('/') ? resolve(v) : v;
  if (Array.isArray(v)) return v.map((x) => resolvePaths(x, resolve));
  if (typeof v === 'object' && v !== null)
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolvePaths(x, resolve)]));
  return v;
}

/**
 * The network configuration a runtime uses for the next sandbox: the first file of `dir` by name, as containerd's
 * CRI picks it, read anew each time so that a node agent that chains its plugin into it (Istio's install-cni) is
 * used from the next pod on. A single-plugin `.conf` is a list of that one plugin (libcni ConfListFromConf).
 * `resolve` maps the paths the plugins are given (Istio's `cni_agent_run_dir`, say) to where they are for this
 * runtime, as a node's kubelet resolves hostPath volumes.
 */
export async function loadNetworkConfig(
  dir: string,
  resolve: (p: string) => string = (p) => p,
): Promise<NetworkConfigList> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const first = names.filter((n) => CONF_EXTENSIONS.includes(path.extname(n))).sort()[0];
  if (first === undefined)
    throw new MeshError('UP_ERR_CNI', `no network config found in ${dir}: cni plugin not initialized`);
  const file = path.join(dir, first);
  const list = parseNetworkConfigFile(await readFile(file, 'utf8'), file);
  return Object.freeze({ ...list, plugins: list.plugins.map((p) => resolvePaths(p, resolve) as typeof p) });
}

/** A `.conflist`, or a `.conf` as the list of its one plugin. */
function parseNetworkConfigFile(text: string, file: string): NetworkConfigList {
  if (file.endsWith('.conflist')) return parseNetworkConfigList(text, file);
  let conf: Record<string, unknown>;
  try {
    conf = asRecord(JSON.parse(text));
  } catch (e) {
    throw new MeshError('UP_ERR_CNI', `${file}: not JSON: ${(e as Error).message}`);
  }
  return parseNetworkConfigList(
    JSON.stringify({ cniVersion: conf['cniVersion'], name: conf['name'], plugins: [conf] }),
    file,
  );
}

export class CniRuntime {
  constructor(private readonly opts: CniRuntimeOptions) {}

  /** Runs ADD through the chain and caches the final result; a failing plugin fails the whole ADD. */
  async add(list: NetworkConfigList, at: Attachment): Promise<Record<string, unknown>> {
    let prev: Record<string, unknown> | undefined;
    for (const plugin of list.plugins) prev = await this.exec('ADD', list, plugin, at, prev);
    const result = prev ?? {};
    await mkdir(this.opts.cacheDir, { recursive: true, mode: 0o700 });
    await writeFile(this.cachePath(list, at), JSON.stringify(result), { mode: 0o600 });
    return result;
  }

  /**
   * Runs DEL through the chain in reverse with the cached result. Every plugin runs even when one fails (DEL
   * must release what it can); the first failure is thrown afterwards.
   */
  async del(list: NetworkConfigList, at: Attachment): Promise<void> {
    const cached = await this.cached(list, at);
    const failures: Error[] = [];
    for (const plugin of [...list.plugins].reverse()) {
      await this.exec('DEL', list, plugin, at, cached).catch((e: unknown) =>
        failures.push(e instanceof Error ? e : new Error(String(e))),
      );
    }
    if (failures[0] !== undefined) throw failures[0];
    await rm(this.cachePath(list, at), { force: true });
  }

  /** Runs CHECK through the chain with the cached result. */
  async check(list: NetworkConfigList, at: Attachment): Promise<void> {
    const cached = await this.cached(list, at);
    if (cached === undefined)
      throw new MeshError('UP_ERR_CNI', `no cached result for ${at.containerId}/${at.ifName}: CHECK needs a prior ADD`);
    for (const plugin of list.plugins) await this.exec('CHECK', list, plugin, at, cached);
  }

  private cachePath(list: NetworkConfigList, at: Attachment): string {
    return path.join(this.opts.cacheDir, `${list.name}-${at.containerId}-${at.ifName}.json`);
  }

  private async cached(list: NetworkConfigList, at: Attachment): Promise<Record<string, unknown> | undefined> {
    const text = await readFile(this.cachePath(list, at), 'utf8').catch(() => undefined);
    return text === undefined ? undefined : (JSON.parse(text) as Record<string, unknown>);
  }

  private async find(type: string): Promise<string> {
    if (type.includes('/')) throw new MeshError('UP_ERR_CNI', `plugin type "${type}" must be a name, not a path`);
    for (const dir of this.opts.pluginDirs) {
      const p = path.join(dir, type);
      if (
        await access(p, constants.X_OK).then(
          () => true,
          () => false,
        )
      )
        return p;
    }
    throw new MeshError(
      'UP_ERR_CNI',
      `CNI plugin "${type}" not found in ${this.opts.pluginDirs.join(':')} (install containernetworking-plugins, or check CNI_PATH)`,
    );
  }

  /** Runs one plugin: config on stdin with the list's name and version (and prevResult), CNI_* in the environment. */
  private async exec(
    command: Command,
    list: NetworkConfigList,
    plugin: NetworkConfigList['plugins'][number],
    at: Attachment,
    prev: Record<string, unknown> | undefined,
  ): Promise<Record<string, unknown>> {
    const binary = await this.find(plugin.type);
    const config = {
      ...plugin,
      cniVersion: list.cniVersion,
      name: list.name,
      ...(prev === undefined ? {} : { prevResult: prev }),
    };
    const env = {
      PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      CNI_COMMAND: command,
      CNI_CONTAINERID: at.containerId,
      CNI_NETNS: at.netns,
      CNI_IFNAME: at.ifName,
      CNI_ARGS: Object.entries({ IgnoreUnknown: '1', ...at.args })
        .map(([k, v]) => `${k}=${v}`)
        .join(';'),
      CNI_PATH: this.opts.pluginDirs.join(':'),
    };
    const { code, stdout, stderr } =
      this.opts.inNetns === undefined
        ? await runCommand(binary, [], { env, stdin: JSON.stringify(config) })
        : await runCommand('nsenter', [`--net=${this.opts.inNetns}`, '--', binary], {
            env,
            stdin: JSON.stringify(config),
          });
    let out: Record<string, unknown> = {};
    if (stdout.trim() !== '') {
      try {
        out = JSON.parse(stdout) as Record<string, unknown>;
      } catch {
        throw new MeshError(
          'UP_ERR_CNI',
          `CNI plugin ${plugin.type} ${command}: output is not JSON: ${stdout.slice(0, 200)}`,
        );
      }
    }
    if (code !== 0) {
      const msg = typeof out['msg'] === 'string' ? out['msg'] : stderr.trim() || `exit status ${String(code)}`;
      const details = typeof out['details'] === 'string' && out['details'] !== '' ? ` (${out['details']})` : '';
      const pluginCode = typeof out['code'] === 'number' ? out['code'] : code;
      throw new MeshError(
        'UP_ERR_CNI',
        `CNI plugin ${plugin.type} ${command} failed with code ${String(pluginCode)}: ${msg}${details}`,
      );
    }
    // ADD returns the new result; DEL and CHECK print nothing, and the chain keeps the result it had.
    return command === 'ADD' ? out : (prev ?? {});
  }
}
