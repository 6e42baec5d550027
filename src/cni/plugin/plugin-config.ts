/**
 * Istio's plugin fields of the network config, read once for ADD (istio cni/pkg/plugin/plugin.go `Config`, as
 * cni/pkg/install/cniconfig.go writes them). Absent or null fields take Go's zero values, as Go's JSON decoder
 * leaves them, so a config Istio's installer wrote means the same here. Other fields (`ipam`, `dns`, `capabilities`,
 * `runtimeConfig`, and `native_nftables`, which only Istio's sidecar path reads) are ignored. Istio's kubeconfig for
 * the plugin is `<cni_agent_run_dir>/istio-cni-kubeconfig` (cni/pkg/plugin/kubernetes.go; the older
 * `kubernetes.kubeconfig` field went in Istio 1.24), and its socket `<cni_agent_run_dir>/pluginevent.sock`
 * (cni/pkg/constants/constants.go).
 */
import path from 'node:path';
import { LogControl } from '../../lib/log.js';
import type { CniVersion } from './cni-version.js';
import { compileEnablementSelectors, type EnablementSelectors } from './enablement-selectors.js';
import { configError, type NetworkConfig } from './network-config.js';
import { parsePrevResult, type PrevResult } from './prev-result.js';

export const CNI_EVENT_SOCKET_NAME = 'pluginevent.sock';
export const CNI_PLUGIN_KUBECONFIG_NAME = 'istio-cni-kubeconfig';

export interface PluginConfig {
  readonly cniVersion: CniVersion;
  /** A level spec for `LogControl`; Istio's `none` is `silent`. */
  readonly logLevel: string;
  readonly ambientEnabled: boolean;
  readonly enablementSelectors: EnablementSelectors;
  readonly excludeNamespaces: readonly string[];
  /** The node agent's namespace: its own pods there are never held up by the plugin. */
  readonly podNamespace: string;
  /** Istio's retry of the pod lookup (30 more tries, a second apart) instead of one more try. */
  readonly enableAmbientDetectionRetry: boolean;
  readonly prevResult: PrevResult | undefined;
  readonly socketPath: string;
  readonly kubeconfigPath: string;
}

/** Istio's plugin default when `plugin_log_level` is unset (its log package's default level). */
const DEFAULT_LOG_LEVEL = 'info';

function optional<T>(
  fields: Readonly<Record<string, unknown>>,
  field: string,
  what: string,
  ok: (v: unknown) => v is T,
  zero: T,
): T {
  const v = fields[field];
  if (v === undefined || v === null) return zero;
  if (!ok(v)) throw configError(field, `must be ${what} (got ${JSON.stringify(v)})`);
  return v;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isBoolean = (v: unknown): v is boolean => typeof v === 'boolean';
const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString);

function logLevelSpec(level: string): string {
  if (level === '') return DEFAULT_LOG_LEVEL;
  const spec = level.toLowerCase() === 'none' ? 'silent' : level;
  try {
    LogControl.checkLevel(spec);
  } catch {
    throw configError('plugin_log_level', `"${level}" is not a log level (debug, info, warn, error, fatal, none)`);
  }
  return spec;
}

export function parsePluginConfig(net: NetworkConfig): PluginConfig {
  const f = net.fields;
  const ambientEnabled = optional(f, 'ambient_enabled', 'true or false', isBoolean, false);
  const cniAgentRunDir = optional(f, 'cni_agent_run_dir', 'a directory path', isString, '');
  // Istio's installer always writes it; without it the socket and kubeconfig would resolve against whatever
  // directory the runtime started the plugin in.
  if (ambientEnabled && !path.isAbsolute(cniAgentRunDir))
    throw configError(
      'cni_agent_run_dir',
      `must be the node agent's run directory as an absolute path (e.g. /var/run/istio-cni), got ${JSON.stringify(cniAgentRunDir)}`,
    );
  return Object.freeze({
    cniVersion: net.cniVersion,
    logLevel: logLevelSpec(optional(f, 'plugin_log_level', 'a log level', isString, '')),
    ambientEnabled,
    enablementSelectors: compileEnablementSelectors(f['enablement_selectors'], 'enablement_selectors'),
    excludeNamespaces: Object.freeze([
      ...optional(f, 'exclude_namespaces', 'a list of namespace names', isStringList, []),
    ]),
    podNamespace: optional(f, 'pod_namespace', 'a namespace name', isString, ''),
    enableAmbientDetectionRetry: optional(f, 'enable_ambient_detection_retry', 'true or false', isBoolean, false),
    prevResult:
      f['prevResult'] === undefined || f['prevResult'] === null ? undefined : parsePrevResult(f['prevResult']),
    socketPath: path.join(cniAgentRunDir, CNI_EVENT_SOCKET_NAME),
    kubeconfigPath: path.join(cniAgentRunDir, CNI_PLUGIN_KUBECONFIG_NAME),
  });
}
