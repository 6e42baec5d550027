/**
 * istiod's config store fed by the Kubernetes API: one informer per kind the model reads (istio
 * `pilot/pkg/serviceregistry/ambient/` builds its collections from the same kinds). Namespaces, ReplicaSets,
 * Deployments, Jobs and CronJobs are not watched: the model reads no namespace field, and a pod's workload name
 * comes from its controller owner's name as istio `pkg/kube/util.go` `GetDeployMetaFromPod` derives it, without
 * reading the owner.
 *
 * Each object is checked against the same schemas as a manifest (`manifest-schema.ts`) when its informer delivers
 * it, once per version, and reaches the store as the same typed `Resource` a manifest gives; a refused object is
 * treated as a refused document is, named by kind and namespace/name.
 */
import { Document, LineCounter } from 'yaml';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { RestartingInformer } from '../../kube/informer.js';
import { listJson } from '../../kube/list-json.js';
import type { MeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { checkDocument, objectKey, type Manifest, type RejectedObject } from './manifest-dir.js';
import { SchemaWalker, type ResourceKind } from './manifest-schema.js';
import type { ConfigStore } from './config-store.js';

interface Watched {
  /** A kind with a schema, so its objects are `Resource`s typed by it. */
  readonly kind: ResourceKind;
  readonly apiVersion: string;
  /** The list and watch path across all namespaces. */
  readonly path: string;
}

/** What the model reads (`src/istiod/model/`), and the CA's impersonation check (Pods). */
export const WATCHED_KINDS: readonly Watched[] = [
  { kind: 'Pod', apiVersion: 'v1', path: '/api/v1/pods' },
  { kind: 'Service', apiVersion: 'v1', path: '/api/v1/services' },
  { kind: 'Node', apiVersion: 'v1', path: '/api/v1/nodes' },
  { kind: 'EndpointSlice', apiVersion: 'discovery.k8s.io/v1', path: '/apis/discovery.k8s.io/v1/endpointslices' },
  { kind: 'ServiceEntry', apiVersion: 'networking.istio.io/v1', path: '/apis/networking.istio.io/v1/serviceentries' },
  { kind: 'WorkloadEntry', apiVersion: 'networking.istio.io/v1', path: '/apis/networking.istio.io/v1/workloadentries' },
  {
    kind: 'AuthorizationPolicy',
    apiVersion: 'security.istio.io/v1',
    path: '/apis/security.istio.io/v1/authorizationpolicies',
  },
  {
    kind: 'PeerAuthentication',
    apiVersion: 'security.istio.io/v1',
    path: '/apis/security.istio.io/v1/peerauthentications',
  },
];

export interface CheckedObject {
  readonly manifest: Manifest | undefined;
  readonly rejected: RejectedObject | undefined;
  readonly errors: readonly string[];
  readonly warnings: readonly string[];
}

/** One API object checked as a manifest is; messages and `source` name it by kind and namespace/name. */
export function checkApiObject(w: Watched, o: KubernetesObject): CheckedObject {
  // List items carry no kind or apiVersion (the list does); watch events do.
  const value = { ...o, apiVersion: o.apiVersion ?? w.apiVersion, kind: o.kind ?? w.kind };
  const ns = o.metadata?.namespace ?? '';
  const name = o.metadata?.name ?? '';
  const out = {
    objects: [] as Manifest[],
    errors: [] as MeshError[],
    warnings: [] as string[],
    rejected: [] as RejectedObject[],
  };
  checkDocument(
    value,
    new Document(value),
    new SchemaWalker(new LineCounter()),
    { where: ns === '' ? name : `${ns}/${name}`, file: '', at: () => '' },
    out,
  );
  return {
    manifest: out.objects[0],
    rejected: out.rejected[0],
    errors: out.errors.map((e) => e.message),
    warnings: out.warnings,
  };
}

/** Feeds `store` from the API: `synced` resolves once every informer has listed and the store has the lists. */
export class KubeSource {
  private readonly informers: RestartingInformer<KubernetesObject>[];
  readonly synced: Promise<void>;

  constructor(
    kc: KubeConfig,
    private readonly store: ConfigStore,
    private readonly log: Logger,
  ) {
    this.informers = WATCHED_KINDS.map((w) => {
      const set = (o: KubernetesObject): void => this.set(w, o);
      return new RestartingInformer<KubernetesObject>(
        kc,
        w.path,
        () => listJson(kc, w.path),
        {
          add: set,
          update: set,
          delete: (o) =>
            store.remove(
              objectKey({
                kind: w.kind,
                metadata: { namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? '' },
              }),
            ),
        },
        log,
      );
    });
    this.synced = Promise.all(this.informers.map((i) => i.synced)).then(() => store.flush());
  }

  start(): void {
    for (const i of this.informers) i.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  private set(w: Watched, o: KubernetesObject): void {
    const r = checkApiObject(w, o);
    for (const e of r.errors) this.log.error({ error: e }, 'refused an invalid object; it keeps its last good version');
    for (const warning of r.warnings) this.log.warn(warning);
    if (r.manifest !== undefined) this.store.upsert(r.manifest);
    else if (r.rejected !== undefined) this.store.refuse(r.rejected);
  }
}
