/**
 * Node authorization against the Kubernetes API (istio `security/pkg/server/ca/node_auth.go` ClusterNodeAuthorizer):
 * an informer on pods that have not failed (`status.phase!=Failed`, as Istio filters them), indexed by
 * (service account, node). The caller's pod is the one its TokenReview names; it must still exist with that UID
 * and run as the caller's service account, and the impersonated service account must have a pod on its node.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Identity } from '../../lib/spiffe.js';
import type { RestartingInformer } from '../../kube/informer.js';
import type { SharedInformerFactory } from '../../kube/shared-informer-factory.js';
import type { Caller } from './authenticate.js';
import { POD_NAME_EXTRA } from './kube-jwt-authenticator.js';
import type { NodeAuthorizer } from './node-authorizer.js';

/** Failed pods hold no identity on their node (node_auth.go's pod filter). */
const NOT_FAILED = 'status.phase!=Failed';

/** The index key of a pod with both a node and a service account, as node_auth.go's SaNode; else undefined. */
function saNode(pod: V1Pod): string | undefined {
  const node = pod.spec?.nodeName ?? '';
  const sa = pod.spec?.serviceAccountName ?? '';
  if (node === '' || sa === '') return undefined;
  return indexKey(pod.metadata?.namespace ?? '', sa, node);
}

const indexKey = (namespace: string, serviceAccount: string, node: string): string =>
  `${node}/${namespace}/${serviceAccount}`;
const podKey = (pod: V1Pod): string => `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;

export class ClusterNodeAuthorizer implements NodeAuthorizer {
  private readonly pods: RestartingInformer<V1Pod>;
  /** SaNode key → the pods under it. */
  private readonly index = new Map<string, Set<string>>();
  /** Pod → the SaNode key it is indexed under, to move it when it changes. */
  private readonly indexed = new Map<string, string>();

  constructor(informers: SharedInformerFactory) {
    this.pods = informers.informerFor<V1Pod>('/api/v1/pods', NOT_FAILED);
    this.pods.addEventHandler({
      add: (p) => this.reindex(p),
      update: (p) => this.reindex(p),
      delete: (p) => this.unindex(podKey(p)),
    });
  }

  /** Resolves once the pods have been listed. */
  get synced(): Promise<void> {
    return this.pods.synced;
  }

  denial(caller: Caller, requested: Identity): string | undefined {
    // As Istio, only a TokenReview's pod counts: a JWT_RULE token's claims name none here.
    if (caller.pod === undefined || caller.podUid === undefined)
      return `the token of ${caller.namespace}/${caller.serviceAccount} is bound to no pod (no ${POD_NAME_EXTRA} in its TokenReview); node proxies need pod-bound tokens`;
    const pod = this.pods.get(caller.pod, caller.namespace);
    if (pod === undefined) return `pod ${caller.namespace}/${caller.pod} not found`;
    // A pod recreated under the same name: the token belongs to the old one.
    if (pod.metadata?.uid !== caller.podUid)
      return `pod found, but UID does not match: ${pod.metadata?.uid ?? ''} vs ${caller.podUid}`;
    if (pod.spec?.serviceAccountName !== caller.serviceAccount)
      return `pod found, but ServiceAccount does not match: ${pod.spec?.serviceAccountName ?? ''} vs ${caller.serviceAccount}`;
    const node = pod.spec?.nodeName ?? '';
    const found = this.index.get(indexKey(requested.namespace, requested.serviceAccount, node));
    if (found === undefined || found.size === 0)
      return `no instances of "${requested.namespace}/${requested.serviceAccount}" found on node "${node}"`;
    return undefined;
  }

  private reindex(pod: V1Pod): void {
    const key = podKey(pod);
    this.unindex(key);
    const k = saNode(pod);
    if (k === undefined) return;
    this.indexed.set(key, k);
    let set = this.index.get(k);
    if (set === undefined) this.index.set(k, (set = new Set()));
    set.add(key);
  }

  private unindex(key: string): void {
    const k = this.indexed.get(key);
    if (k === undefined) return;
    this.indexed.delete(key);
    const set = this.index.get(k);
    set?.delete(key);
    if (set?.size === 0) this.index.delete(k);
  }
}
