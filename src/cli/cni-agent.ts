import { Command } from '@commander-js/extra-typings';
import { CniAgent } from '../cni/agent/cni-agent.js';
import { CNI_AGENT_DEFAULTS, loadCniAgentConfig } from '../cni/agent/cni-agent-config.js';
import { HostProbeRules } from '../cni/agent/host-rules.js';
import { PodNetnsCache } from '../cni/agent/netns-cache.js';
import { PodRules } from '../cni/agent/pod-rules.js';
import { ZtunnelServer } from '../cni/agent/ztunnel-server.js';
import { loadKubeConfig } from '../kube/kube-config.js';
import { LogControl } from '../lib/log.js';
import { fatal } from './fatal.js';

/**
 * `amesh cni-agent`: Istio's CNI node agent (istio-cni's `install-cni` in ambient mode) for one node. Config comes
 * from Istio's env names (NODE_NAME, AMBIENT_DNS_CAPTURE, AMBIENT_ENABLEMENT_SELECTOR, EXCLUDE_NAMESPACES,
 * MOUNTED_CNI_NET_DIR, CNI_CONF_NAME, ...) and these flags; see docs/cni.md for what it installs on the node and
 * docs/errors.md for what each failure means.
 */
export function cniAgentCommand(): Command {
  return new Command('cni-agent')
    .description(
      "run Istio's CNI node agent for one node (NODE_NAME): installs the CNI plugin on the node, serves its /cmdadd, in-pod rules, ZDS to ztunnel, enrollment by labels",
    )
    .option('--kubeconfig <file>', 'the API to watch (default: KUBECONFIG, else the in-cluster service account)')
    .option(
      '--cni-agent-run-dir <dir>',
      `where pluginevent.sock and istio-cni-kubeconfig go (CNI_AGENT_RUN_DIR; default ${CNI_AGENT_DEFAULTS.runDir})`,
    )
    .option(
      '--ztunnel-uds-address <path>',
      `the ZDS socket ztunnel connects to (ZTUNNEL_UDS_ADDRESS; default ${CNI_AGENT_DEFAULTS.ztunnelSocket})`,
    )
    .option('--readiness-address <host:port>', `/healthz and /readyz (default ${CNI_AGENT_DEFAULTS.readinessAddress})`)
    .option('--monitoring-address <host:port>', `Prometheus /metrics (default ${CNI_AGENT_DEFAULTS.monitoringAddress})`)
    .option('--log-level <level>', 'log level, or scope=level list (default LOG_LEVEL or info)')
    .action(async (o) => {
      let logs: LogControl | undefined;
      try {
        const cfg = loadCniAgentConfig(o);
        const kc = loadKubeConfig(cfg.kubeconfig);
        logs = new LogControl({ format: cfg.logFormat, level: cfg.logLevel, component: 'cni-agent' });
        const agent = await CniAgent.start(
          cfg,
          kc,
          {
            rules: new PodRules(cfg),
            hostProbes: new HostProbeRules(cfg),
            netns: new PodNetnsCache(),
            zdsServer: (socket, snapshot, log, metrics) => new ZtunnelServer(socket, snapshot, log, { metrics }),
          },
          logs,
        );
        const stop = (): void => void agent.stop().then(() => process.exit(0));
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      } catch (e) {
        fatal(e, logs);
      }
    });
}
