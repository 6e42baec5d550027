import type { Identity } from '../../lib/spiffe.js';
import type { ConfigStore } from '../registry/config-store.js';
import type { Caller } from './authenticate.js';
import type { NodeAuthorizer } from './node-authorizer.js';

/**
 * Node authorization over istiod's config store, for tokens from istiod's local issuer: the caller's node is the
 * token's node claim, else the node of the pod it names.
 */
export class ManifestNodeAuthorizer implements NodeAuthorizer {
  constructor(private readonly store: ConfigStore) {}

  denial(caller: Caller, id: Identity): string | undefined {
    const node =
      caller.node ?? (caller.pod === undefined ? undefined : this.store.nodeOfPod(caller.namespace, caller.pod));
    if (node === undefined || node === '')
      return 'the token names no node (kubernetes.io node or pod claim) to check the impersonated pod against';
    if (!this.store.hasPodOnNode(id.namespace, id.serviceAccount, node))
      return `no pod of ${id.namespace}/${id.serviceAccount} runs on node ${node}`;
    return undefined;
  }
}
