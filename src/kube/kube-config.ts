/**
 * Where amesh components find their Kubernetes API, in the order Istio's components look: an explicit
 * `--kubeconfig`, then `KUBECONFIG`, then the in-cluster service account (KUBERNETES_SERVICE_HOST and the
 * mounted token). Unlike client-node's loadFromDefault, nothing falls back to http://localhost:8080: a
 * component with no API configured says so.
 */
import { existsSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { MeshError } from '../lib/errors.js';

/** Where Kubernetes mounts a pod's service-account token. */
const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export function loadKubeConfig(flag: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): KubeConfig {
  const kc = new KubeConfig();
  const file = flag ?? env['KUBECONFIG'];
  try {
    if (file !== undefined && file !== '') {
      kc.loadFromFile(file);
    } else if (env['KUBERNETES_SERVICE_HOST'] !== undefined && existsSync(IN_CLUSTER_TOKEN)) {
      kc.loadFromCluster();
    } else {
      throw new Error('no --kubeconfig, no KUBECONFIG and not running in a pod');
    }
  } catch (e) {
    throw new MeshError('AMESH_ERR_CONFIG', `cannot load a Kubernetes API configuration: ${(e as Error).message} (pass --kubeconfig FILE, e.g. the kubeconfig in amesh apiserver's --data-dir)`, { cause: e });
  }
  if (kc.getCurrentCluster() === null) throw new MeshError('AMESH_ERR_CONFIG', `the kubeconfig ${file ?? ''} has no current context with a cluster`);
  return kc;
}
