/**
 * `amesh cni-agent`'s configuration, read once from flags and Istio's env names (istio cni/pkg/cmd/root.go, where
 * viper binds each flag to its upper-cased env name; cni/pkg/nodeagent/options.go; the ConfigMap of
 * manifests/charts/istio-cni). A flag wins over its env var, as with viper. Defaults are the values an Istio
 * install runs with (the chart's, with the ambient profile's AMBIENT_ENABLED=true: this agent has no other mode), so
 * a node agent started with no env behaves as Istio's does in a cluster. The installer's settings are read by
 * src/cni/install/install-config.ts.
 */
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { parseListenAddress, type ListenAddress } from '../../lib/address.js';
import { MeshError, isMeshError } from '../../lib/errors.js';
import { CNI_MONITORING_PORT } from '../../lib/istio-ports.js';
import { ZDS_SOCKET_PATH } from '../../zds/zds-socket-path.js';
import { envGoBool } from '../../lib/go-bool.js';
import { LogControl, parseLogFormat, type LogFormat } from '../../lib/log.js';
import { loadCniInstallConfig, type CniInstallConfig } from '../install/install-config.js';
import { compileEnablementSelectors, type EnablementSelectors } from '../plugin/enablement-selectors.js';
import { CNI_EVENT_SOCKET_NAME, CNI_PLUGIN_KUBECONFIG_NAME } from '../plugin/plugin-config.js';
import {
  DEFAULT_HOST_PROBE_SNAT_IP,
  DEFAULT_HOST_PROBE_SNAT_IPV6,
  checkProbeSnatIps,
  type PodRulesConfig,
} from './pod-rules.js';

export const CNI_AGENT_DEFAULTS = Object.freeze({
  /** Istio's --cni-agent-run-dir: the plugin finds the agent's socket and kubeconfig there. */
  runDir: '/var/run/istio-cni',
  /** Istio's --ztunnel-uds-address: the hostPath both DaemonSets mount; ztunnel connects to it. */
  ztunnelSocket: ZDS_SOCKET_PATH,
  /** Istio's health server (cni/pkg/constants ReadinessPort), which the DaemonSet's readiness probe asks. */
  readinessAddress: '0.0.0.0:8000',
  /** Istio's --monitoring-port. */
  monitoringAddress: `0.0.0.0:${CNI_MONITORING_PORT}`,
  /** The chart's ambient.dnsCapture: pods' DNS goes to ztunnel's proxy unless a pod opts out. */
  dnsCapture: true,
  /** The chart's ambient.ipv6: ip6tables rules too, where the pod has IPv6. */
  ipv6: true,
  /** The chart's ambient.reconcileIptablesOnStartup: enrolled pods' rules are brought up to date at start. */
  reconcilePodRulesOnStartup: true,
  /** Istio's SYSTEM_NAMESPACE: ztunnel pods (`app=ztunnel`) there are never enrolled. */
  systemNamespace: 'istio-system',
  /** The chart's excludeNamespaces. */
  excludeNamespaces: 'kube-system',
  /** The chart's ambient.enablementSelectors (the same as amesh-cni's default conflist). */
  enablementSelector: JSON.stringify([
    { podSelector: { matchLabels: { 'istio.io/dataplane-mode': 'ambient' } } },
    {
      podSelector: { matchExpressions: [{ key: 'istio.io/dataplane-mode', operator: 'NotIn', values: ['none'] }] },
      namespaceSelector: { matchLabels: { 'istio.io/dataplane-mode': 'ambient' } },
    },
  ]),
});

export interface CniAgentConfig extends PodRulesConfig {
  readonly nodeName: string;
  /** The API to watch; undefined: KUBECONFIG, else the in-cluster service account. */
  readonly kubeconfig: string | undefined;
  readonly runDir: string;
  /** `<runDir>/pluginevent.sock`, where the plugin posts /cmdadd. */
  readonly pluginSocket: string;
  /** `<runDir>/istio-cni-kubeconfig`, which the plugin reads. */
  readonly pluginKubeconfig: string;
  readonly ztunnelSocket: string;
  readonly reconcilePodRulesOnStartup: boolean;
  readonly enablementSelectors: EnablementSelectors;
  readonly excludeNamespaces: readonly string[];
  readonly systemNamespace: string;
  /** The agent's own namespace (POD_NAMESPACE): where its DaemonSet `istio-cni-node` is looked up at shutdown. */
  readonly podNamespace: string;
  /** AMBIENT_DISABLE_SAFE_UPGRADE: clean up host rules at shutdown even while the DaemonSet exists. */
  readonly disableSafeUpgrade: boolean;
  /** The plugin's installation on the node; undefined when CNI_ENABLE_INSTALL=false. */
  readonly install: CniInstallConfig | undefined;
  readonly readinessAddress: ListenAddress;
  readonly monitoringAddress: ListenAddress;
  readonly logFormat: LogFormat;
  readonly logLevel: string;
}

export interface CniAgentFlags {
  kubeconfig?: string | undefined;
  cniAgentRunDir?: string | undefined;
  ztunnelUdsAddress?: string | undefined;
  readinessAddress?: string | undefined;
  monitoringAddress?: string | undefined;
  logLevel?: string | undefined;
}

type Env = Readonly<Record<string, string | undefined>>;

const configError = (name: string, problem: string): MeshError =>
  new MeshError('AMESH_ERR_CONFIG', `${name}: ${problem}`);

function envString(env: Env, name: string, def: string): string {
  const v = env[name];
  return v === undefined || v === '' ? def : v;
}

/** Istio's util.SplitExcludeNamespaces: comma-separated, blanks dropped. */
export function splitExcludeNamespaces(s: string): string[] {
  return s
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
}

/** AMBIENT_ENABLEMENT_SELECTOR decoded (for the plugin's config) and compiled. */
function enablementSelectors(text: string): { decoded: unknown; compiled: EnablementSelectors } {
  const name = 'AMBIENT_ENABLEMENT_SELECTOR';
  let decoded: unknown;
  try {
    decoded = parseYaml(text);
  } catch (e) {
    throw configError(name, `is not YAML: ${(e as Error).message}`);
  }
  try {
    return { decoded, compiled: compileEnablementSelectors(decoded, name) };
  } catch (e) {
    if (isMeshError(e)) throw configError(name, e.message);
    throw e;
  }
}

function absoluteDir(v: string, name: string): string {
  if (!path.isAbsolute(v)) throw configError(name, `"${v}" must be an absolute path`);
  return v;
}

export function loadCniAgentConfig(flags: CniAgentFlags, env: Env = process.env): CniAgentConfig {
  const nodeName = env['NODE_NAME'] ?? '';
  if (nodeName === '')
    throw configError(
      'NODE_NAME',
      'is not set: the node agent enrolls only the pods on its own node (set it to the Node name, as the DaemonSet does from spec.nodeName)',
    );
  const runDir = absoluteDir(
    flags.cniAgentRunDir ?? envString(env, 'CNI_AGENT_RUN_DIR', CNI_AGENT_DEFAULTS.runDir),
    '--cni-agent-run-dir',
  );
  const logFormat = parseLogFormat(env);
  const logLevel = flags.logLevel ?? envString(env, 'LOG_LEVEL', 'info');
  LogControl.parseSpec(logLevel);
  const snat = {
    hostProbeSnatIp: envString(env, 'HOST_PROBE_SNAT_IP', DEFAULT_HOST_PROBE_SNAT_IP),
    hostProbeSnatIpv6: envString(env, 'HOST_PROBE_SNAT_IPV6', DEFAULT_HOST_PROBE_SNAT_IPV6),
  };
  checkProbeSnatIps('AMESH_ERR_CONFIG', snat);
  if (!envGoBool(env, 'AMBIENT_ENABLED', true))
    throw configError('AMBIENT_ENABLED', "is false, but amesh's node agent only runs Istio's ambient mode");
  const selectors = enablementSelectors(
    envString(env, 'AMBIENT_ENABLEMENT_SELECTOR', CNI_AGENT_DEFAULTS.enablementSelector),
  );
  const excludeNamespaces = Object.freeze(
    splitExcludeNamespaces(env['EXCLUDE_NAMESPACES'] ?? CNI_AGENT_DEFAULTS.excludeNamespaces),
  );
  const podNamespace = env['POD_NAMESPACE'] ?? '';
  return Object.freeze({
    nodeName,
    ...snat,
    kubeconfig: flags.kubeconfig,
    runDir,
    pluginSocket: path.join(runDir, CNI_EVENT_SOCKET_NAME),
    pluginKubeconfig: path.join(runDir, CNI_PLUGIN_KUBECONFIG_NAME),
    ztunnelSocket: absoluteDir(
      flags.ztunnelUdsAddress ?? envString(env, 'ZTUNNEL_UDS_ADDRESS', CNI_AGENT_DEFAULTS.ztunnelSocket),
      '--ztunnel-uds-address',
    ),
    dnsCapture: envGoBool(env, 'AMBIENT_DNS_CAPTURE', CNI_AGENT_DEFAULTS.dnsCapture),
    ipv6: envGoBool(env, 'AMBIENT_IPV6', CNI_AGENT_DEFAULTS.ipv6),
    reconcilePodRulesOnStartup: envGoBool(
      env,
      'AMBIENT_RECONCILE_POD_RULES_ON_STARTUP',
      CNI_AGENT_DEFAULTS.reconcilePodRulesOnStartup,
    ),
    enablementSelectors: selectors.compiled,
    excludeNamespaces,
    systemNamespace: envString(env, 'SYSTEM_NAMESPACE', CNI_AGENT_DEFAULTS.systemNamespace),
    podNamespace,
    install: loadCniInstallConfig(env, {
      runDir,
      podNamespace,
      excludeNamespaces,
      enablementSelectors: selectors.decoded,
      logLevel,
    }),
    disableSafeUpgrade: envGoBool(env, 'AMBIENT_DISABLE_SAFE_UPGRADE', false),
    readinessAddress: parseListenAddress(
      flags.readinessAddress ?? CNI_AGENT_DEFAULTS.readinessAddress,
      '--readiness-address',
    ),
    monitoringAddress: parseListenAddress(
      flags.monitoringAddress ?? CNI_AGENT_DEFAULTS.monitoringAddress,
      '--monitoring-address',
    ),
    logFormat,
    logLevel,
  });
}
