/**
 * What the node agent's installer does, read once from Istio's env names (istio cni/pkg/cmd/root.go, where viper
 * binds each flag to its upper-cased env var; the chart's ConfigMap `istio-cni-config` sets them) with Istio's
 * defaults, which assume the chart's hostPath mounts: the node's /etc/cni/net.d at /host/etc/cni/net.d and its
 * /opt/cni/bin at /host/opt/cni/bin.
 *
 * Istio fixes the bin dir's mount point in code; here HOST_CNI_BIN_DIR can move it. Three names are amesh's own:
 * AMESH_CNI_PLUGIN_BUNDLE and AMESH_CNI_PLUGIN_RUNTIME say what to install (plugin-files.ts), and
 * CNI_ENABLE_INSTALL=false (the name Istio's installer had for it until 1.18) turns the installer off, for a node
 * whose network config is written by someone else (`amesh up` writes its nodes' own).
 */
import path from 'node:path';
import { MeshError } from '../../lib/errors.js';
import { envGoBool } from '../../lib/go-bool.js';
import { packageRoot } from '../../lib/package-root.js';
import { pluginEntry, type PluginEntry, type PluginEntrySettings } from './plugin-entry.js';
import { PLUGIN_BUNDLE, type PluginSource } from './plugin-files.js';

export const CNI_INSTALL_DEFAULTS = Object.freeze({
  /** Istio's --mounted-cni-net-dir: the node's CNI config dir as the agent's pod mounts it. */
  netDir: '/host/etc/cni/net.d',
  /** Istio's HostCNIBinDir (cni/pkg/constants): the node's CNI bin dir as the pod mounts it. */
  binDir: '/host/opt/cni/bin',
  /** Istio's name for its own file when it is not chained (cniconfig.go getCNIConfigFilepath). */
  standaloneConfName: 'YYY-istio-cni.conf',
});

/** Istio's CNIConfModeDefault and CNIConfModeGroupRead, for a config file the installer creates. */
const CONF_MODE = 0o600;
const CONF_MODE_GROUP_READ = 0o640;

export interface CniInstallConfig {
  /** MOUNTED_CNI_NET_DIR. */
  readonly netDir: string;
  /** CNI_CONF_NAME: the primary config to chain into; empty, the first the runtime would load. */
  readonly confName: string;
  /** CHAINED_CNI_PLUGIN: chain into the primary config, else write a config of our own. */
  readonly chained: boolean;
  /** CNI_CONF_GROUP_READ: the mode of a config file the installer creates (a chained one keeps its own). */
  readonly confMode: number;
  /** HOST_CNI_BIN_DIR. */
  readonly binDir: string;
  readonly plugin: PluginSource;
  readonly entry: PluginEntry;
}

type Env = Readonly<Record<string, string | undefined>>;

const configError = (name: string, problem: string): MeshError =>
  new MeshError('AMESH_ERR_CONFIG', `${name}: ${problem}`);

function absolutePath(env: Env, name: string, def: string): string {
  const v = env[name] || def;
  if (!path.isAbsolute(v)) throw configError(name, `"${v}" must be an absolute path`);
  return v;
}

/** The installer's configuration, or undefined when CNI_ENABLE_INSTALL turns it off. */
export function loadCniInstallConfig(
  env: Env,
  settings: Omit<PluginEntrySettings, 'enableAmbientDetectionRetry'>,
): CniInstallConfig | undefined {
  if (!envGoBool(env, 'CNI_ENABLE_INSTALL', true)) return undefined;
  if (envGoBool(env, 'ISTIO_OWNED_CNI_CONFIG', false))
    throw configError(
      'ISTIO_OWNED_CNI_CONFIG',
      'an Istio-owned CNI config file (02-istio-cni.conflist) is not supported: the plugin is chained into the primary config',
    );
  const confName = env['CNI_CONF_NAME'] ?? '';
  if (confName.includes('/')) throw configError('CNI_CONF_NAME', `"${confName}" must be a file name, not a path`);
  return Object.freeze({
    netDir: absolutePath(env, 'MOUNTED_CNI_NET_DIR', CNI_INSTALL_DEFAULTS.netDir),
    confName,
    chained: envGoBool(env, 'CHAINED_CNI_PLUGIN', true),
    confMode: envGoBool(env, 'CNI_CONF_GROUP_READ', false) ? CONF_MODE_GROUP_READ : CONF_MODE,
    binDir: absolutePath(env, 'HOST_CNI_BIN_DIR', CNI_INSTALL_DEFAULTS.binDir),
    plugin: Object.freeze({
      bundle: absolutePath(env, 'AMESH_CNI_PLUGIN_BUNDLE', path.join(packageRoot(), PLUGIN_BUNDLE)),
      runtime: absolutePath(env, 'AMESH_CNI_PLUGIN_RUNTIME', process.execPath),
    }),
    entry: pluginEntry({
      ...settings,
      enableAmbientDetectionRetry: envGoBool(env, 'ENABLE_AMBIENT_DETECTION_RETRY', false),
    }),
  });
}
