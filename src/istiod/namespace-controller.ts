/**
 * Publishes istiod's root certificate in every namespace, as Istio's namespace controller does (istio
 * `pilot/pkg/serviceregistry/kube/controller/namespacecontroller.go`, `security/pkg/k8s/configutil.go`): a
 * ConfigMap `istio-ca-root-cert` labelled `istio.io/config: "true"` with the root under `root-cert.pem`.
 *
 * Every event on a namespace, or on an `istio-ca-root-cert` ConfigMap (watched by field selector), reconciles that
 * namespace: a missing ConfigMap is created (a namespace gone or terminating meanwhile is skipped, as is one
 * istiod may not write to); an existing one whose `root-cert.pem` differs gets it back, its other keys and its
 * labels left as they are. So a deleted ConfigMap is recreated and an edited root restored. Kubernetes' own
 * namespaces are skipped (kube-public, kube-node-lease, local-path-storage), except kube-system, where ztunnel
 * may run.
 */
import { CoreV1Api, type KubeConfig, type V1ConfigMap, type V1Namespace } from '@kubernetes/client-node';
import { MeshError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';
import type { InformerHandlers, RestartingInformer } from '../kube/informer.js';
import { describeKubeError, kubeStatus } from '../kube/kube-status.js';
import { ReconcileQueue } from '../kube/reconcile-queue.js';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';

/** PILOT_CA_CERT_CONFIGMAP's default (pilot/pkg/features/experimental.go). */
export const CA_ROOT_CONFIGMAP = 'istio-ca-root-cert';
/** constants.CACertNamespaceConfigMapDataName. */
export const CA_ROOT_CONFIGMAP_KEY = 'root-cert.pem';
export const CA_ROOT_CONFIGMAP_LABELS: Readonly<Record<string, string>> = Object.freeze({ 'istio.io/config': 'true' });
/** inject.IgnoredNamespaces less kube-system (pkg/kube/inject/initializer.go). */
const IGNORED_NAMESPACES: ReadonlySet<string> = new Set(['kube-public', 'kube-node-lease', 'local-path-storage']);
/** namespacecontroller.go's maxRetries: 5 ms to 80 ms between them. */
const MAX_ATTEMPTS = 5;
const BY_NAME = `metadata.name=${CA_ROOT_CONFIGMAP}`;

export class NamespaceController {
  private readonly core: CoreV1Api;
  private readonly queue: ReconcileQueue;
  private readonly namespaces: RestartingInformer<V1Namespace>;
  private readonly configMaps: RestartingInformer<V1ConfigMap>;

  constructor(
    kc: KubeConfig,
    informers: SharedInformerFactory,
    private readonly rootPem: string,
    private readonly log: Logger,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.queue = new ReconcileQueue((ns) => this.reconcile(ns), MAX_ATTEMPTS, log);
    const enqueue = <T extends V1Namespace | V1ConfigMap>(
      namespaceOf: (o: T) => string | undefined,
    ): InformerHandlers<T> => {
      const h = (o: T): void => {
        const ns = namespaceOf(o);
        if (ns !== undefined && !IGNORED_NAMESPACES.has(ns)) this.queue.add(ns);
      };
      return { add: h, update: h, delete: h };
    };
    this.namespaces = informers.informerFor<V1Namespace>('/api/v1/namespaces');
    this.namespaces.addEventHandler(enqueue((n) => n.metadata?.name));
    this.configMaps = informers.informerFor<V1ConfigMap>('/api/v1/configmaps', BY_NAME);
    this.configMaps.addEventHandler(enqueue((c) => c.metadata?.namespace));
  }

  /** Resolves once both informers have listed, which is when reconciling starts. */
  get synced(): Promise<void> {
    return Promise.all([this.namespaces.synced, this.configMaps.synced]).then(() => undefined);
  }

  /** Reconciles once the informers (which the factory starts) have listed. */
  start(): void {
    void this.synced.then(() => this.queue.run());
  }

  stop(): void {
    this.queue.stop();
  }

  private async reconcile(namespace: string): Promise<void> {
    const existing = this.configMaps.get(CA_ROOT_CONFIGMAP, namespace);
    if (existing === undefined) {
      await this.create(namespace);
      return;
    }
    if (existing.data?.[CA_ROOT_CONFIGMAP_KEY] === this.rootPem) return;
    try {
      const body: V1ConfigMap = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: existing.metadata,
        data: { ...existing.data, [CA_ROOT_CONFIGMAP_KEY]: this.rootPem },
        binaryData: existing.binaryData,
        immutable: existing.immutable,
      };
      await this.core.replaceNamespacedConfigMap({ name: CA_ROOT_CONFIGMAP, namespace, body });
    } catch (e) {
      throw new MeshError(
        'ISTIOD_ERR_KUBE_API',
        `cannot update ConfigMap ${namespace}/${CA_ROOT_CONFIGMAP}: ${describeKubeError(e)}`,
        { cause: e },
      );
    }
    this.log.info({ namespace, configMap: CA_ROOT_CONFIGMAP }, 'root certificate restored');
  }

  private async create(namespace: string): Promise<void> {
    const body: V1ConfigMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: CA_ROOT_CONFIGMAP, namespace, labels: { ...CA_ROOT_CONFIGMAP_LABELS } },
      data: { [CA_ROOT_CONFIGMAP_KEY]: this.rootPem },
    };
    try {
      await this.core.createNamespacedConfigMap({ namespace, body });
    } catch (e) {
      const s = kubeStatus(e);
      // Created meanwhile, or the namespace is gone or going: nothing to do (configutil.go).
      if (
        s !== undefined &&
        (s.reason === 'AlreadyExists' || s.reason === 'NotFound' || s.causes.includes('NamespaceTerminating'))
      )
        return;
      if (s?.reason === 'Forbidden') {
        this.log.info(
          { namespace, configMap: CA_ROOT_CONFIGMAP, error: describeKubeError(e) },
          'skip writing the root ConfigMap: no permission to',
        );
        return;
      }
      throw new MeshError(
        'ISTIOD_ERR_KUBE_API',
        `cannot create ConfigMap ${namespace}/${CA_ROOT_CONFIGMAP}: ${describeKubeError(e)}`,
        { cause: e },
      );
    }
    this.log.info({ namespace, configMap: CA_ROOT_CONFIGMAP }, 'root certificate published');
  }
}
