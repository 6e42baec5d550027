/**
 * Authenticates CA and xDS callers by asking the Kubernetes API to review their Bearer token, as Istio's kube JWT
 * authenticator does (istio `security/pkg/server/ca/authenticate/kubeauth/kube_jwt.go` and
 * `security/pkg/k8s/tokenreview/k8sauthn.go`): a TokenReview with istiod's TOKEN_AUDIENCES; the result must be
 * authenticated, in the `system:serviceaccounts` group, with a `system:serviceaccount:NS:SA` username. The pod
 * the token is bound to (name and UID) comes from the review's `extra`, for node authorization. A caller that
 * names another cluster in its `clusterid` metadata is refused: istiod knows only its own (CLUSTER_ID).
 */
import { AuthenticationV1Api, type KubeConfig, type V1TokenReview } from '@kubernetes/client-node';
import { describeKubeError } from '../../kube/kube-status.js';
import { authenticationFailure, bearerTokenOf, type Caller, type CallerAuthenticator } from './authenticate.js';

/** The group every service account's user is in (k8s.io/apiserver pkg/authentication/serviceaccount/util.go). */
const SERVICE_ACCOUNTS_GROUP = 'system:serviceaccounts';
/** Where a TokenReview names the pod a token is bound to (the same util.go). */
export const POD_NAME_EXTRA = 'authentication.kubernetes.io/pod-name';
export const POD_UID_EXTRA = 'authentication.kubernetes.io/pod-uid';

export class KubeJwtAuthenticator implements CallerAuthenticator {
  private readonly api: AuthenticationV1Api;
  private readonly server: string;

  constructor(
    kc: KubeConfig,
    private readonly clusterId: string,
    private readonly audiences: readonly string[],
  ) {
    this.api = kc.makeApiClient(AuthenticationV1Api);
    this.server = kc.getCurrentCluster()?.server ?? '';
  }

  async authenticate(authorization: string | undefined, clusterId = ''): Promise<Caller> {
    const token = bearerTokenOf(authorization);
    if (clusterId !== '' && clusterId !== this.clusterId) {
      return authenticationFailure(
        `client claims to be in cluster "${clusterId}", but we only know about local cluster "${this.clusterId}"`,
      );
    }
    let review: V1TokenReview;
    try {
      review = await this.api.createTokenReview({
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: { token, audiences: [...this.audiences] },
        },
      });
    } catch (e) {
      return authenticationFailure(
        `failed to validate the JWT from cluster "${this.clusterId}": TokenReview failed: ${describeKubeError(e)}`,
      );
    }
    const status = review.status ?? {};
    const fail = (why: string): never =>
      authenticationFailure(`failed to validate the JWT from cluster "${this.clusterId}": ${why}`);
    if (status.error !== undefined && status.error !== '')
      return fail(`the service account authentication returns an error: ${status.error}`);
    if (status.authenticated !== true) return fail('the token is not authenticated');
    const user = status.user ?? {};
    if (!(user.groups ?? []).includes(SERVICE_ACCOUNTS_GROUP)) return fail('the token is not a service account');
    const parts = (user.username ?? '').split(':');
    if (parts.length !== 4) return fail('invalid username field in the token review result');
    const [, , namespace, serviceAccount] = parts as [string, string, string, string];
    if (serviceAccount === '') return authenticationFailure('failed to parse the JWT; service account required');
    if (namespace === '') return authenticationFailure('failed to parse the JWT; namespace required');
    const extra = (key: string): string | undefined => {
      const v = user.extra?.[key]?.[0];
      return v === undefined || v === '' ? undefined : v;
    };
    return {
      namespace,
      serviceAccount,
      node: undefined,
      pod: extra(POD_NAME_EXTRA),
      podUid: extra(POD_UID_EXTRA),
      issuer: this.server,
    };
  }
}
