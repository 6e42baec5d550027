/**
 * The Kubernetes keys of CNI_ARGS, which containerd and CRI-O set for a pod sandbox (istio cni/pkg/plugin/plugin.go
 * `K8sArgs`), read with the rules of containernetworking/cni pkg/types/args.go LoadArgs: `K=V` pairs separated by
 * `;`, and any other key an error unless `IgnoreUnknown` is 1 or true (runtimes always set it).
 */
import { MeshError } from '../../lib/errors.js';

export interface K8sArgs {
  /** Empty when the runtime did not say: then the sandbox is not a Kubernetes pod. */
  readonly podName: string;
  readonly podNamespace: string;
}

const KEYS = { K8S_POD_NAME: 'podName', K8S_POD_NAMESPACE: 'podNamespace' } as const;
/** Keys Istio's K8sArgs declares but the ambient path does not read: known, so they need no IgnoreUnknown. */
const UNUSED_KEYS = ['K8S_POD_INFRA_CONTAINER_ID', 'K8S_POD_UID'];

const argsError = (problem: string): MeshError => new MeshError('CNI_ERR_ENV', `CNI_ARGS ${problem}`);

export function parseK8sArgs(cniArgs: string): K8sArgs {
  const out = { podName: '', podNamespace: '' };
  if (cniArgs === '') return Object.freeze(out);
  let ignoreUnknown = false;
  const unknown: string[] = [];
  for (const pair of cniArgs.split(';')) {
    const kv = pair.split('=');
    if (kv.length !== 2) throw argsError(`has ${JSON.stringify(pair)}, not a KEY=VALUE pair`);
    const [key, value] = kv as [string, string];
    if (key === 'IgnoreUnknown') {
      const v = value.toLowerCase();
      if (!['1', 'true', '0', 'false'].includes(v))
        throw argsError(`IgnoreUnknown=${value} is not a boolean (1, true, 0, false)`);
      ignoreUnknown = v === '1' || v === 'true';
    } else if (Object.hasOwn(KEYS, key)) {
      out[KEYS[key as keyof typeof KEYS]] = value;
    } else if (!UNUSED_KEYS.includes(key)) {
      unknown.push(pair);
    }
  }
  if (unknown.length > 0 && !ignoreUnknown)
    throw argsError(`has unknown keys (${unknown.join('; ')}) and no IgnoreUnknown=1`);
  return Object.freeze(out);
}
