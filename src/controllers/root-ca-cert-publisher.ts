/**
 * The root CA certificate publisher (kubernetes pkg/controller/certificates/rootcacertpublisher): every active
 * namespace has a ConfigMap `kube-root-ca.crt` whose `ca.crt` is the cluster's CA, which the service-account
 * volume every pod gets mounts as `ca.crt`. A deleted or edited one is put back.
 */
import type { KubeConfig, V1ConfigMap } from '@kubernetes/client-node';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import type { Logger } from '../lib/log.js';
import { NamespaceObjectController } from './namespace-object-controller.js';

const DESCRIPTION =
  "The certificate authority of this cluster's API server, for clients that reach it inside the cluster (kubernetes.default.svc).";

export class RootCaCertPublisher extends NamespaceObjectController<V1ConfigMap> {
  /** `rootCa`: the PEM to publish (kube-controller-manager's --root-ca-file). */
  constructor(
    kc: KubeConfig,
    informers: SharedInformerFactory,
    private readonly rootCa: string,
    log: Logger,
  ) {
    super(kc, informers, '/api/v1/configmaps', 'kube-root-ca.crt', log);
  }

  protected async ensure(namespace: string, current: V1ConfigMap | undefined): Promise<void> {
    const data = current?.data ?? {};
    if (current !== undefined && data['ca.crt'] === this.rootCa && Object.keys(data).length === 1) return;
    const body: V1ConfigMap = {
      metadata: {
        name: this.name,
        annotations: { 'kubernetes.io/description': DESCRIPTION },
        resourceVersion: current?.metadata?.resourceVersion,
      },
      data: { 'ca.crt': this.rootCa },
    };
    if (current === undefined) await this.core.createNamespacedConfigMap({ namespace, body });
    else await this.core.replaceNamespacedConfigMap({ name: this.name, namespace, body });
  }
}
