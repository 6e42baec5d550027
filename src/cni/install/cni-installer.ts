/**
 * The node agent's installer (istio cni/pkg/install/install.go Installer): puts the plugin into the node's CNI bin
 * dir (plugin-files.ts), chains its entry into the node's primary network config (plugin-chain.ts) once there is
 * one, then watches both and repairs what anything else changes, for as long as the agent runs. The plugin's
 * kubeconfig is the agent's to write (src/cni/agent/plugin-kubeconfig.ts); the installer only removes it.
 *
 * As Istio's Run loop: after installing, it watches the bin dir's plugin files and the config directory, checks the
 * config is still right (the primary one, with our entry as wanted), reports ready, and waits for a change; a change
 * makes it not ready, install again and check again, paced by InstallThrottle. It never writes a config that is
 * already right, since other CNIs' agents watch the same directory. Unlike Istio's, which exits, an install that
 * fails (a primary config that is not JSON, a bin dir it cannot write) is logged and tried again when something
 * changes there, or after a while; it stays not ready meanwhile.
 *
 * `cleanup()` is Istio's Cleanup, which the agent runs at shutdown unless its DaemonSet is still there (an upgrade
 * or a node reboot, when the plugin must stay to hold new pods back until the new agent is up): our entry leaves the
 * config it was chained into (a standalone config file is removed), and the kubeconfig and plugin files go.
 */
import { mkdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { writeFileAtomic } from '../../lib/atomic-file.js';
import { MeshError, describeError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { CNI_INSTALL_DEFAULTS, type CniInstallConfig } from './install-config.js';
import { InstallThrottle } from './install-throttle.js';
import { networkConfigFiles, parseNetworkConfigFile, type NetworkConfigFile } from './network-config-file.js';
import { PathWatch } from './path-watch.js';
import { chainPlugin, chainsEntry, unchainPlugin } from './plugin-chain.js';
import { standaloneConfig } from './plugin-entry.js';
import { PluginFiles } from './plugin-files.js';

/** How soon a failed install is tried again when nothing it watches changes. */
const RETRY_MS = 10_000;

const isMissing = (e: unknown): boolean => (e as NodeJS.ErrnoException).code === 'ENOENT';

const exists = (file: string): Promise<boolean> =>
  stat(file).then(
    () => true,
    () => false,
  );

export class CniInstaller {
  private isReady = false;
  /** The config file our entry is in (Istio's cniConfigFilepath), once written or found right. */
  private configFile: string | undefined;
  private readonly files: PluginFiles;
  private readonly throttle: InstallThrottle;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(
    private readonly cfg: CniInstallConfig,
    /** The plugin's kubeconfig, removed by `cleanup()`. */
    private readonly kubeconfigFile: string,
    private readonly log: Logger,
  ) {
    this.files = new PluginFiles(cfg.plugin, cfg.binDir, log);
    this.throttle = new InstallThrottle(log);
  }

  /** Installed, and the config checked right since the last change. */
  get ready(): boolean {
    return this.isReady;
  }

  /** Starts installing and keeping the install right; `stop()` ends it. */
  start(): void {
    this.loop ??= this.run();
  }

  /** Stops watching (leaving the install as it is); resolves once the loop has ended. */
  async stop(): Promise<void> {
    this.stopping.abort(new Error('the CNI installer is stopping'));
    this.isReady = false;
    await this.loop;
  }

  private async run(): Promise<void> {
    const { signal } = this.stopping;
    for (let repair = false; !signal.aborted; repair = true) {
      try {
        if (repair) {
          await this.throttle.wait(signal, this.configFile);
          this.log.info(
            'the node-level CNI setup changed: checking whether the config or the plugin needs redeploying',
          );
        }
        await this.installAll(signal);
        const watch = this.watch();
        try {
          if (await this.configValid()) {
            this.isReady = true;
            this.log.info({ file: this.configFile }, 'the CNI plugin is installed; watching for changes');
            await watch.next(signal);
          }
        } finally {
          this.isReady = false;
          watch.close();
        }
      } catch (e) {
        if (signal.aborted) return;
        this.log.error(
          { error: describeError(e) },
          'cannot install the CNI plugin; trying again when its files or the config directory change',
        );
        const watch = this.watch();
        try {
          await watch.next(signal, RETRY_MS);
        } catch {
          return;
        } finally {
          watch.close();
        }
      }
    }
  }

  private watch(): PathWatch {
    return new PathWatch([...this.files.watched, { path: this.cfg.netDir }], this.log);
  }

  private async installAll(signal: AbortSignal): Promise<void> {
    await this.files.install();
    // Watchable before the node's CNI writes its first config there (a hostPath mount normally exists already).
    try {
      await mkdir(this.cfg.netDir, { recursive: true, mode: 0o755 });
    } catch (e) {
      throw new MeshError(
        'AGENT_ERR_CNI_INSTALL',
        `cannot create the CNI config directory ${this.cfg.netDir}: ${describeError(e)}`,
        { cause: e },
      );
    }
    if (await this.configValid()) {
      this.log.info({ file: this.configFile }, 'valid CNI config present, not modifying');
      return;
    }
    this.configFile = await this.writeConfig(signal);
  }

  /** Istio's checkValidCNIConfig: the highest-priority config is ours to keep, and holds our entry as wanted. */
  private async configValid(): Promise<boolean> {
    const { cfg, configFile } = this;
    const names = await networkConfigFiles(cfg.netDir, this.log);
    if (names.length === 0 || configFile === undefined) return false;
    const first = path.join(cfg.netDir, names[0]!);
    if (first !== configFile) {
      // Pinned by CNI_CONF_NAME, or standalone: ours stays where it is, even behind another.
      if (cfg.confName === '' && cfg.chained) return false;
      this.log.warn({ file: configFile, first }, 'the CNI config file is preempted by one loaded before it');
    }
    let text: string;
    try {
      text = await readFile(configFile, 'utf8');
    } catch (e) {
      if (isMissing(e)) return false;
      throw e;
    }
    let parsed: NetworkConfigFile;
    try {
      parsed = parseNetworkConfigFile(text, configFile);
    } catch {
      return false;
    }
    if (cfg.chained) return chainsEntry(parsed, cfg.entry);
    return isDeepStrictEqual(parsed.config, JSON.parse(standaloneConfig(cfg.entry)));
  }

  /** Istio's writeCNIConfig: chains our entry into the primary config (or writes ours); returns the file. */
  private async writeConfig(signal: AbortSignal): Promise<string> {
    const { cfg } = this;
    let file = await this.primaryConfigFile(signal);
    if (!cfg.chained) {
      await writeFileAtomic(file, standaloneConfig(cfg.entry), cfg.confMode);
      this.log.info({ file }, 'wrote CNI config');
      return file;
    }
    let text: string;
    let mode: number;
    try {
      text = await readFile(file, 'utf8');
      mode = (await stat(file)).mode & 0o7777;
    } catch (e) {
      throw new MeshError('AGENT_ERR_CNI_INSTALL', `cannot read the CNI config ${file}: ${describeError(e)}`, {
        cause: e,
      });
    }
    const chained = chainPlugin(text, file, cfg.entry);
    if (file.endsWith('.conf')) {
      // A list now: written as .conflist beside it, then the .conf goes (the runtime loads one or the other).
      const list = `${file}list`;
      await writeFileAtomic(list, chained, mode);
      await rm(file, { force: true });
      this.log.info({ from: file, file: list }, 'converted the CNI config to a list and wrote it');
      file = list;
    } else if (chained !== text) {
      await writeFileAtomic(file, chained, mode);
      this.log.info({ file }, 'wrote CNI config');
    } else {
      this.log.info({ file }, 'the CNI config already chains the plugin');
    }
    return file;
  }

  /**
   * Istio's getCNIConfigFilepath: the standalone file; else CNI_CONF_NAME, or the first config the runtime would
   * load, waiting for it to appear (the node's own CNI may write it after the agent started). A `.conf` named but
   * found as `.conflist` (or the other way round) is taken as it is.
   */
  private async primaryConfigFile(signal: AbortSignal): Promise<string> {
    const { cfg } = this;
    if (!cfg.chained) return path.join(cfg.netDir, cfg.confName || CNI_INSTALL_DEFAULTS.standaloneConfName);
    const watch = new PathWatch([{ path: cfg.netDir }], this.log);
    try {
      let name = cfg.confName;
      while (name === '') {
        const names = await networkConfigFiles(cfg.netDir, this.log);
        if (names[0] !== undefined) name = names[0];
        else {
          this.log.info({ dir: cfg.netDir }, 'waiting for the primary CNI network config to be written');
          await watch.next(signal);
        }
      }
      let file = path.join(cfg.netDir, name);
      while (!(await exists(file))) {
        if (file.endsWith('.conf') && (await exists(`${file}list`))) file = `${file}list`;
        else if (file.endsWith('.conflist') && (await exists(file.slice(0, -4)))) file = file.slice(0, -4);
        else {
          this.log.info({ file }, 'waiting for the CNI network config to be written');
          await watch.next(signal);
        }
      }
      return file;
    } finally {
      watch.close();
    }
  }

  /** Removes our entry (or our config file), the plugin's kubeconfig and the plugin files; logs what fails. */
  async cleanup(): Promise<void> {
    const { configFile } = this;
    const step = async (what: string, run: () => Promise<void>): Promise<void> => {
      try {
        await run();
      } catch (e) {
        this.log.error({ error: describeError(e) }, `cannot remove ${what}`);
      }
    };
    if (configFile !== undefined)
      await step('the plugin from the CNI config', async () => {
        if (!this.cfg.chained) {
          await rm(configFile, { force: true });
          this.log.info({ file: configFile }, 'removed the CNI config file');
          return;
        }
        let text: string;
        try {
          text = await readFile(configFile, 'utf8');
        } catch (e) {
          if (isMissing(e)) return;
          throw e;
        }
        const without = unchainPlugin(text, configFile);
        if (without === text) return;
        await writeFileAtomic(configFile, without, (await stat(configFile)).mode & 0o7777);
        this.log.info({ file: configFile }, 'removed the plugin from the CNI config');
      });
    await step("the plugin's kubeconfig", async () => {
      await rm(this.kubeconfigFile, { force: true });
      this.log.info({ file: this.kubeconfigFile }, "removed the CNI plugin's kubeconfig");
    });
    await step('the plugin files', () => this.files.remove());
  }
}
