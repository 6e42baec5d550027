/**
 * The plugin's entry the installer chains into the node's network config: Istio's `istio-cni` entry (istio
 * cni/pkg/install/cniconfig.go createCNIConfigFile, which marshals cni/pkg/plugin/plugin.go `Config`), field for
 * field and in the order Istio writes it (its entry passes through a Go map, so its keys come out sorted), with our
 * plugin's name and type. `ipam`, `dns` and `native_nftables` are there because Istio's struct always writes them;
 * the plugin ignores them. A standalone config (CHAINED_CNI_PLUGIN=false) is the same entry with Istio's
 * cniVersion 0.3.1.
 */
import { LogControl } from '../../lib/log.js';
import { asRecord } from '../../lib/record.js';
import { PLUGIN_TYPE } from './plugin-chain.js';

/** The scope the plugin logs under (src/cni/plugin/main.ts); its level in the agent's spec is the plugin's. */
const PLUGIN_LOG_SCOPE = 'cni-plugin';
const STANDALONE_CNI_VERSION = '0.3.1';

export interface PluginEntrySettings {
  readonly runDir: string;
  readonly podNamespace: string;
  readonly excludeNamespaces: readonly string[];
  /** AMBIENT_ENABLEMENT_SELECTOR as decoded (already validated). */
  readonly enablementSelectors: unknown;
  /** The agent's log level spec (`info`, `info,cni-plugin=debug`). */
  readonly logLevel: string;
  readonly enableAmbientDetectionRetry: boolean;
}

export type PluginEntry = Readonly<Record<string, unknown>>;

/** A metav1.LabelSelector as Go marshals it: empty fields left out, a requirement's keys in its field order. */
function labelSelector(v: unknown): Record<string, unknown> {
  const s = asRecord(v);
  const out: Record<string, unknown> = {};
  const expressions = Array.isArray(s['matchExpressions']) ? (s['matchExpressions'] as unknown[]) : [];
  if (expressions.length > 0)
    out['matchExpressions'] = expressions.map((e) => {
      const { key, operator, values } = asRecord(e);
      return Array.isArray(values) && values.length > 0 ? { key, operator, values } : { key, operator };
    });
  const labels = asRecord(s['matchLabels']);
  if (Object.keys(labels).length > 0)
    out['matchLabels'] = Object.fromEntries(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
  return out;
}

/** Istio's level name for the plugin: the `cni-plugin` scope's level, else the default, else info. */
export function pluginLogLevel(spec: string): string {
  const { def, per } = LogControl.parseSpec(spec);
  const level = per.find(([scope]) => scope === PLUGIN_LOG_SCOPE)?.[1] ?? def ?? 'info';
  if (level === 'silent') return 'none';
  return level === 'trace' ? 'debug' : level;
}

export function pluginEntry(s: PluginEntrySettings): PluginEntry {
  const selectors = Array.isArray(s.enablementSelectors) ? (s.enablementSelectors as unknown[]) : [];
  return Object.freeze({
    ambient_enabled: true,
    cni_agent_run_dir: s.runDir,
    dns: {},
    enable_ambient_detection_retry: s.enableAmbientDetectionRetry,
    enablement_selectors: selectors.map((e) => ({
      namespaceSelector: labelSelector(asRecord(e)['namespaceSelector']),
      podSelector: labelSelector(asRecord(e)['podSelector']),
    })),
    exclude_namespaces: s.excludeNamespaces.length === 0 ? null : [...s.excludeNamespaces],
    ipam: {},
    name: PLUGIN_TYPE,
    native_nftables: false,
    plugin_log_level: pluginLogLevel(s.logLevel),
    pod_namespace: s.podNamespace,
    type: PLUGIN_TYPE,
  });
}

/** The text of a standalone network config file holding only the entry. */
export function standaloneConfig(entry: PluginEntry): string {
  return `${JSON.stringify({ cniVersion: STANDALONE_CNI_VERSION, ...entry }, null, 2)}\n`;
}
