import type { KubeConfig } from '@kubernetes/client-node';
/**
 * What istiod's CA does differently when it runs against a Kubernetes API (`--kubeconfig`), as Istio's istiod
 * assembles it (istio `pilot/pkg/bootstrap/server.go`): callers are authenticated by JWT_RULE issuers first, when
 * there are any, then by a TokenReview (istiod's own local issuer is not trusted: tokens come from the API's
 * TokenRequest); node proxies' impersonation is checked against pods from the API, when CA_TRUSTED_NODE_ACCOUNTS
 * names any; and the root is published as a ConfigMap in every namespace.
 */
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import type { LogControl } from '../lib/log.js';
import { Authenticator, type CallerAuthenticator } from './ca/authenticate.js';
import { AuthenticatorChain } from './ca/authenticator-chain.js';
import { ClusterNodeAuthorizer } from './ca/cluster-node-authorizer.js';
import { KubeJwtAuthenticator } from './ca/kube-jwt-authenticator.js';
import type { NodeAuthorizer } from './ca/node-authorizer.js';
import type { IstiodConfig } from './config.js';
import { NamespaceController } from './namespace-controller.js';

/** server.go's answer when no node authorizer runs. */
const NO_NODE_AUTHORIZER: NodeAuthorizer = {
  denial: () => 'impersonation not allowed, as node authorizer (CA_TRUSTED_NODE_ACCOUNTS) is not configured',
};

export class KubeCaSecurity {
  /** Resolves once the informers have listed what they watch; istiod is not ready before. */
  readonly synced: Promise<void>;

  private constructor(
    readonly authenticator: CallerAuthenticator,
    readonly nodeAuthorizer: NodeAuthorizer,
    private readonly namespaces: NamespaceController,
    pods: ClusterNodeAuthorizer | undefined,
  ) {
    this.synced = Promise.all([pods?.synced, namespaces.synced]).then(() => undefined);
  }

  /**
   * Asks `informers` (istiod's, on this API; it starts them) for what it watches, without waiting for them: an API
   * that is down must not hold istiod's start, which then reports not ready until `synced`. Until the pods are
   * listed, impersonation finds no pod and is refused.
   */
  static start(
    cfg: IstiodConfig,
    kc: KubeConfig,
    rootPem: string,
    informers: SharedInformerFactory,
    logs: LogControl,
  ): KubeCaSecurity {
    const kubeJwt = new KubeJwtAuthenticator(kc, cfg.clusterId, cfg.tokenAudiences);
    const authenticator =
      cfg.jwtRules.length === 0
        ? kubeJwt
        : new AuthenticatorChain([new Authenticator(cfg.jwtRules, undefined, cfg.tokenAudiences), kubeJwt]);
    const pods = cfg.trustedNodeAccounts.length === 0 ? undefined : new ClusterNodeAuthorizer(informers);
    const namespaces = new NamespaceController(kc, informers, rootPem, logs.scope('namespace-controller'));
    namespaces.start();
    return new KubeCaSecurity(authenticator, pods ?? NO_NODE_AUTHORIZER, namespaces, pods);
  }

  stop(): void {
    this.namespaces.stop();
  }
}
