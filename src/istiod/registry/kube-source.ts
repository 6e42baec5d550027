/**
 * istiod's config store fed by the Kubernetes API: one informer per kind the model reads (istio
 * `pilot/pkg/serviceregistry/ambient/` builds its collections from the same kinds). Namespaces are read for their
 * labels (waypoint bindings). ReplicaSets, Deployments, Jobs and CronJobs are not watched: a pod's workload name
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
  /**
   * A kind with a schema, so its objects are `Resource`s typed by it; the object's own kind is read as this one
   * (Istio's Gateway is `IstioGateway`, beside the Gateway API's `Gateway`).
   */
  readonly kind: ResourceKind;
  readonly apiVersion: string;
  /** The list and watch path across all namespaces. */
  readonly path: string;
  /**
   * The kind's CRD may not be installed (the Gateway API's, which a cluster gets apart from Istio): while its list
   * is answered 404 the kind has no objects, istiod becomes ready without it, and looks again every 30 s.
   */
  readonly optional?: true;
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
  {
    kind: 'RequestAuthentication',
    apiVersion: 'security.istio.io/v1',
    path: '/apis/security.istio.io/v1/requestauthentications',
  },
  { kind: 'Namespace', apiVersion: 'v1', path: '/api/v1/namespaces' },
  {
    kind: 'Gateway',
    apiVersion: 'gateway.networking.k8s.io/v1',
    path: '/apis/gateway.networking.k8s.io/v1/gateways',
    optional: true,
  },
  {
    kind: 'GatewayClass',
    apiVersion: 'gateway.networking.k8s.io/v1',
    path: '/apis/gateway.networking.k8s.io/v1/gatewayclasses',
    optional: true,
  },
  {
    kind: 'HTTPRoute',
    apiVersion: 'gateway.networking.k8s.io/v1',
    path: '/apis/gateway.networking.k8s.io/v1/httproutes',
    optional: true,
  },
  {
    kind: 'GRPCRoute',
    apiVersion: 'gateway.networking.k8s.io/v1',
    path: '/apis/gateway.networking.k8s.io/v1/grpcroutes',
    optional: true,
  },
  {
    kind: 'IstioGateway',
    apiVersion: 'networking.istio.io/v1',
    path: '/apis/networking.istio.io/v1/gateways',
  },
  {
    kind: 'VirtualService',
    apiVersion: 'networking.istio.io/v1',
    path: '/apis/networking.istio.io/v1/virtualservices',
  },
  {
    kind: 'DestinationRule',
    apiVersion: 'networking.istio.io/v1',
    path: '/apis/networking.istio.io/v1/destinationrules',
  },
  {
    kind: 'TLSRoute',
    apiVersion: 'gateway.networking.k8s.io/v1',
    path: '/apis/gateway.networking.k8s.io/v1/tlsroutes',
    optional: true,
  },
  {
    kind: 'TCPRoute',
    apiVersion: 'gateway.networking.k8s.io/v1',
    path: '/apis/gateway.networking.k8s.io/v1/tcproutes',
    optional: true,
  },
  {
    kind: 'ReferenceGrant',
    apiVersion: 'gateway.networking.k8s.io/v1beta1',
    path: '/apis/gateway.networking.k8s.io/v1beta1/referencegrants',
    optional: true,
  },
];

/** How often istiod looks again for an optional kind whose CRD is not installed (istio's CRD watcher reacts at once). */
const OPTIONAL_KIND_PROBE_MS = 30_000;

export interface CheckedObject {
  readonly manifest: Manifest | undefined;
  readonly rejected: RejectedObject | undefined;
  readonly errors: readonly string[];
  readonly warnings: readonly string[];
}

/** One API object checked as a manifest is; messages and `source` name it by kind and namespace/name. */
export function checkApiObject(w: Watched, o: KubernetesObject): CheckedObject {
  // List items carry no kind or apiVersion (the list does); watch events do. The kind is the watched one's.
  const value = { ...o, apiVersion: o.apiVersion ?? w.apiVersion, kind: w.kind };
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

/**
 * Feeds `store` from the API: `synced` resolves once every informer has listed and the store has the lists (an
 * optional kind whose CRD is missing counts as listed, empty).
 */
export class KubeSource {
  private readonly informers: RestartingInformer<KubernetesObject>[] = [];
  private readonly probes = new Set<NodeJS.Timeout>();
  private stopped = false;
  private started: (optionalsListed: Promise<void>[]) => void = () => undefined;
  readonly synced: Promise<void>;

  constructor(
    private readonly kc: KubeConfig,
    private readonly store: ConfigStore,
    private readonly log: Logger,
    /** istiod's namespace, whose ConfigMaps hold its mesh config (`istio`). */
    meshNamespace: string,
  ) {
    const meshConfig: Watched = {
      kind: 'ConfigMap',
      apiVersion: 'v1',
      path: `/api/v1/namespaces/${meshNamespace}/configmaps`,
    };
    for (const w of [...WATCHED_KINDS, meshConfig]) if (w.optional !== true) this.informers.push(this.informer(w));
    const required = this.informers.map((i) => i.synced);
    this.synced = new Promise<Promise<void>[]>((r) => (this.started = r)).then(async (optionalsListed) => {
      await Promise.all([...required, ...optionalsListed]);
      store.flush();
    });
  }

  private informer(w: Watched): RestartingInformer<KubernetesObject> {
    const set = (o: KubernetesObject): void => this.set(w, o);
    return new RestartingInformer<KubernetesObject>(
      this.kc,
      w.path,
      () => listJson(this.kc, w.path),
      {
        add: set,
        update: set,
        delete: (o) =>
          this.store.remove(
            objectKey({
              kind: w.kind,
              metadata: { namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? '' },
            }),
          ),
      },
      this.log,
    );
  }

  /**
   * Starts `w`'s informer once its list is served; until then looks again every 30 s. Resolves when its first
   * list is in, or when the API said the kind does not exist.
   */
  private follow(w: Watched): Promise<void> {
    return new Promise<void>((listed) => {
      const probe = (): void => {
        if (this.stopped) return listed();
        listJson(this.kc, `${w.path}?limit=1`).then(
          () => {
            if (this.stopped) return listed();
            const inf = this.informer(w);
            this.informers.push(inf);
            inf.start();
            void inf.synced.then(listed);
          },
          (e: unknown) => {
            if ((e as { statusCode?: number }).statusCode === 404) listed();
            else this.log.warn({ path: w.path, err: (e as Error).message }, 'cannot list; trying again');
            const t = setTimeout(() => {
              this.probes.delete(t);
              probe();
            }, OPTIONAL_KIND_PROBE_MS);
            this.probes.add(t);
          },
        );
      };
      probe();
    });
  }

  start(): void {
    for (const i of this.informers) i.start();
    this.started(WATCHED_KINDS.filter((w) => w.optional === true).map((w) => this.follow(w)));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.probes) clearTimeout(t);
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
