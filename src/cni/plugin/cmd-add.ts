/**
 * ADD: decide whether the new pod is to be captured, hand it to the node agent if so, and print `prevResult` on
 * (istio cni/pkg/plugin/plugin.go CmdAdd and doAddRun, ambient path). Every failure on the way to a capture fails
 * the ADD, so no pod that should be in the mesh starts outside it (fail closed); a pod not to be captured never
 * waits on the agent.
 */
import type { Logger } from '../../lib/log.js';
import { MeshError, describeError } from '../../lib/errors.js';
import type { CniEnv } from './cni-env.js';
import { cniPluginAddEvent, type CniPluginAddEvent } from './cni-plugin-add-event.js';
import { decideBeforeLookup, decideForPod, type PodFacts } from './capture-decision.js';
import { parseK8sArgs } from './k8s-args.js';
import type { NetworkConfig } from './network-config.js';
import { parsePluginConfig } from './plugin-config.js';
import { addResult } from './prev-result.js';

/** The plugin's contacts with the world, replaced in unit tests. */
export interface AddDeps {
  readPod(kubeconfigPath: string, namespace: string, name: string): Promise<PodFacts>;
  postAddEvent(socketPath: string, event: CniPluginAddEvent): Promise<void>;
  isOwnNetns(netnsPath: string): boolean;
  /** Between two pod lookups (Istio: 1 s). */
  readonly retryDelayMs: number;
  readonly log: Logger;
  /** Applies `plugin_log_level` once the config is read. */
  setLogLevel(spec: string): void;
}

/**
 * Istio's lookup tries: backoff.WithMaxRetries(1) (one retry) by default, 30 retries with
 * `enable_ambient_detection_retry`. Istio then swallows a default-mode failure into its sidecar path, which fails
 * the ADD after 30 more tries; amesh has no sidecar path and fails it at once.
 */
const LOOKUP_ATTEMPTS = 2;
const LOOKUP_ATTEMPTS_WITH_RETRY = 31;

async function lookUp(
  deps: AddDeps,
  kubeconfigPath: string,
  namespace: string,
  name: string,
  attempts: number,
): Promise<PodFacts> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await deps.readPod(kubeconfigPath, namespace, name);
    } catch (e) {
      if (attempt >= attempts) throw e;
      deps.log.debug({ attempt, error: describeError(e) }, 'pod lookup failed; retrying');
      await new Promise((r) => setTimeout(r, deps.retryDelayMs));
    }
  }
}

export async function cmdAdd(
  env: CniEnv,
  net: NetworkConfig,
  deps: AddDeps,
): Promise<Readonly<Record<string, unknown>>> {
  const cfg = parsePluginConfig(net);
  deps.setLogLevel(cfg.logLevel);
  if (deps.isOwnNetns(env.netns))
    throw new MeshError('CNI_ERR_NETNS', `CNI_NETNS ${env.netns} is amesh-cni's own network namespace, not a pod's`);
  const args = parseK8sArgs(env.args);
  const pod = `${args.podNamespace}/${args.podName}`;
  const decision =
    decideBeforeLookup(cfg, args) ??
    decideForPod(
      cfg,
      await lookUp(
        deps,
        cfg.kubeconfigPath,
        args.podNamespace,
        args.podName,
        cfg.enableAmbientDetectionRetry ? LOOKUP_ATTEMPTS_WITH_RETRY : LOOKUP_ATTEMPTS,
      ),
    );
  if (decision.capture) {
    await deps.postAddEvent(
      cfg.socketPath,
      cniPluginAddEvent(env.netns, args.podName, args.podNamespace, cfg.prevResult?.ips ?? []),
    );
    deps.log.info({ pod, netns: env.netns, containerId: env.containerId }, 'pod handed to the node agent for capture');
  } else {
    deps.log.info({ pod, reason: decision.reason }, 'pod not captured');
  }
  return addResult(cfg.prevResult, cfg.cniVersion);
}
