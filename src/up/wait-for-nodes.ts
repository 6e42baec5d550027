/**
 * How `amesh up` waits for its kubelets, processes of their own that register their Nodes once the API answers:
 * until every node it made is in the API and Ready, or the time is up.
 */
import type { KubeConfig, V1Node } from '@kubernetes/client-node';
import { listJson } from '../kube/list-json.js';
import { MeshError } from '../lib/errors.js';
import type { NodeRecord } from './up-data-dir.js';

const POLL_MS = 250;

const ready = (n: V1Node): boolean =>
  n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** Resolves once each of `nodes` is registered and Ready; throws UP_ERR_KUBELET naming the others after `timeoutMs`. */
export async function nodesRegistered(kc: KubeConfig, nodes: readonly NodeRecord[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const registered = await listJson<V1Node>(kc, '/api/v1/nodes').then(
      (l) => new Set(l.items.filter(ready).map((n) => n.metadata?.name)),
      () => new Set<string | undefined>(),
    );
    const missing = nodes.filter((n) => !registered.has(n.name)).map((n) => n.name);
    if (missing.length === 0) return;
    if (Date.now() > deadline)
      throw new MeshError(
        'UP_ERR_KUBELET',
        `the kubelets of ${missing.join(', ')} did not register their nodes within ${String(Math.round(timeoutMs / 1000))} s (their errors are above and in up.log)`,
      );
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
