/**
 * The kubeconfig the CNI plugin reads pods and namespaces with, `<run dir>/istio-cni-kubeconfig` (istio
 * cni/pkg/install/kubeconfig.go writes the node agent's own credentials there). Written whole to a temporary file,
 * mode 0600 (Istio's DefaultKubeconfigMode: it holds a token), then renamed, so a plugin running at that moment
 * reads the old file or the new one, never half of one.
 */
import { rename, writeFile } from 'node:fs/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { MeshError, describeError } from '../../lib/errors.js';

const KUBECONFIG_MODE = 0o600;

export async function writePluginKubeconfig(kc: KubeConfig, file: string): Promise<void> {
  const tmp = `${file}.${String(process.pid)}.tmp`;
  try {
    await writeFile(tmp, kc.exportConfig(), { mode: KUBECONFIG_MODE });
    await rename(tmp, file);
  } catch (e) {
    throw new MeshError('AGENT_ERR_RUN_DIR', `cannot write the CNI plugin's kubeconfig ${file}: ${describeError(e)}`, { cause: e });
  }
}
