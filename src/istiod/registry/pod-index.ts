import { isResource, type Manifest, type ResourceOf } from './manifest-dir.js';

/** The pod facts the CA's impersonation check needs (istio `security/pkg/server/ca/authenticate` node authorizer). */
interface PodFacts {
  readonly name: string;
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly nodeName: string;
  readonly phase: string;
}

function podFacts(o: ResourceOf<'Pod'>): PodFacts {
  return {
    name: o.metadata.name,
    namespace: o.metadata.namespace,
    serviceAccount: o.spec.serviceAccountName ?? 'default',
    nodeName: o.spec.nodeName ?? '',
    phase: o.status.phase ?? 'Running',
  };
}

/**
 * The config store's pods indexed for the CA: a certificate request looks up one pod or one
 * (namespace, service account, node) triple, so its cost never grows with the number of pods, and a change to one
 * pod updates only that pod's entries.
 */
export class PodIndex {
  private readonly byName = new Map<string, PodFacts>();
  /** `namespace/serviceAccount/node` → how many pods there have not failed. */
  private readonly liveOnNode = new Map<string, number>();

  add(o: Manifest | undefined): void {
    if (o === undefined || !isResource(o) || o.kind !== 'Pod') return;
    const p = podFacts(o);
    this.byName.set(`${p.namespace}/${p.name}`, p);
    if (p.phase !== 'Failed') this.count(p, 1);
  }

  remove(o: Manifest | undefined): void {
    if (o?.kind !== 'Pod') return;
    const key = `${o.metadata.namespace}/${o.metadata.name}`;
    const p = this.byName.get(key);
    if (p === undefined) return;
    this.byName.delete(key);
    if (p.phase !== 'Failed') this.count(p, -1);
  }

  private count(p: PodFacts, by: number): void {
    const k = `${p.namespace}/${p.serviceAccount}/${p.nodeName}`;
    const n = (this.liveOnNode.get(k) ?? 0) + by;
    if (n === 0) this.liveOnNode.delete(k);
    else this.liveOnNode.set(k, n);
  }

  hasPodOnNode(namespace: string, serviceAccount: string, node: string): boolean {
    return this.liveOnNode.has(`${namespace}/${serviceAccount}/${node}`);
  }

  nodeOfPod(namespace: string, name: string): string | undefined {
    return this.byName.get(`${namespace}/${name}`)?.nodeName;
  }
}
