/**
 * The flags by which istioctl's commands reach a cluster (`--kubeconfig`, `--context`), shared by `amesh install`,
 * `uninstall` and `waypoint`, and the kubeconfig they name.
 */
import type { Command, OptionValues } from '@commander-js/extra-typings';
import type { KubeConfig } from '@kubernetes/client-node';
import { MeshError } from '../lib/errors.js';
import { loadKubeConfig } from '../kube/kube-config.js';

/** Adds --kubeconfig and --context to `cmd`. */
export function withKubeconfigFlags<A extends unknown[], O extends OptionValues>(cmd: Command<A, O>) {
  return cmd
    .option(
      '--kubeconfig <file>',
      "the cluster's kubeconfig (default: KUBECONFIG, else the in-cluster service account)",
    )
    .option('--context <name>', 'the kubeconfig context to use');
}

/** The kubeconfig of --kubeconfig (else KUBECONFIG, else in-cluster), at --context when given. */
export function kubeConfigOf(o: { kubeconfig?: string | undefined; context?: string | undefined }): KubeConfig {
  const kc = loadKubeConfig(o.kubeconfig);
  if (o.context !== undefined) {
    if (kc.getContextObject(o.context) === null)
      throw new MeshError('AMESH_ERR_CONFIG', `--context ${o.context}: no such context in the kubeconfig`);
    kc.setCurrentContext(o.context);
  }
  return kc;
}
