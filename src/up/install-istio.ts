/**
 * The second step of `amesh up`, as `amesh install --set profile=ambient --kubeconfig <up's>` would take it on the
 * bare cluster of the first: the same objects (src/install), applied through the API and waited for with istioctl's
 * progress lines, which become lines of up's progress. istiod then runs as the istiod Deployment's pod, the node
 * agents and ztunnels as the istio-cni-node and ztunnel DaemonSets' pods; the kubelets run the amesh image from the
 * local build (local-image.ts).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { ClusterClient } from '../install/cluster-client.js';
import { generateManifest } from '../install/generate-manifest.js';
import { Installer } from '../install/installer.js';
import { ProgressLog } from '../install/progress-log.js';
import { parseSetFlag } from '../install/set-flag.js';

/** The profile `amesh up` installs. */
export const UP_PROFILE = 'ambient';
/** istioctl's default --readiness-timeout. */
const READINESS_TIMEOUT_MS = 5 * 60_000;

/** Installs Istio's ambient profile on the cluster of `kc`, each progress line through `progress`. */
export async function installIstio(kc: KubeConfig, progress: (line: string) => void): Promise<void> {
  let partial = '';
  const lines = {
    write: (text: string): void => {
      const all = partial + text;
      const parts = all.split('\n');
      partial = parts.pop() ?? '';
      for (const l of parts) if (l !== '') progress(l);
    },
  };
  await new Installer({
    client: new ClusterClient(kc),
    manifest: generateManifest({ files: [], sets: [parseSetFlag(`profile=${UP_PROFILE}`)] }),
    progress: new ProgressLog(lines),
    readinessTimeoutMs: READINESS_TIMEOUT_MS,
  }).run();
}
