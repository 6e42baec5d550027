/**
 * The ServiceAccounts controller (kubernetes pkg/controller/serviceaccount/serviceaccounts_controller.go): every
 * active namespace has a ServiceAccount `default`, made again when it is deleted, so that pods naming no account
 * can get a token.
 */
import type { KubeConfig, V1ServiceAccount } from '@kubernetes/client-node';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import type { Logger } from '../lib/log.js';
import { NamespaceObjectController } from './namespace-object-controller.js';

export class ServiceAccountController extends NamespaceObjectController<V1ServiceAccount> {
  constructor(kc: KubeConfig, informers: SharedInformerFactory, log: Logger) {
    super(kc, informers, '/api/v1/serviceaccounts', 'default', log);
  }

  protected async ensure(namespace: string, current: V1ServiceAccount | undefined): Promise<void> {
    if (current === undefined)
      await this.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: this.name } } });
  }
}
