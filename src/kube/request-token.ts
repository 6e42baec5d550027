/**
 * A service-account token from the Kubernetes API's TokenRequest (`create serviceaccounts/<name>/token`), as the
 * kubelet asks for a pod's projected token: for an audience and a lifetime, and bound to a pod when one is named
 * (`boundObjectRef` with the pod's UID, read first, so a token is never bound to a pod that was since recreated;
 * the API adds the pod's node to the token).
 */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { MeshError } from '../lib/errors.js';
import { describeKubeError } from './kube-status.js';

export interface ServiceAccountTokenRequest {
  readonly namespace: string;
  readonly serviceAccount: string;
  /** Absent: the API's own audiences (an empty list), as for a pod's kube-api-access token. */
  readonly audience?: string | undefined;
  readonly ttlSeconds: number;
  readonly pod?: string | undefined;
  /** The pod's UID when the caller knows it (the kubelet does): the pod is then not read first. */
  readonly podUid?: string | undefined;
}

export async function requestToken(kc: KubeConfig, r: ServiceAccountTokenRequest): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const account = `${r.namespace}/${r.serviceAccount}`;
  let uid = r.podUid;
  if (r.pod !== undefined && uid === undefined) {
    try {
      uid = (await core.readNamespacedPod({ name: r.pod, namespace: r.namespace })).metadata?.uid;
    } catch (e) {
      throw new MeshError(
        'ISTIOD_ERR_KUBE_API',
        `cannot read pod ${r.namespace}/${r.pod} to bind the token to: ${describeKubeError(e)}`,
        { cause: e },
      );
    }
  }
  const boundObjectRef = r.pod === undefined ? undefined : { apiVersion: 'v1', kind: 'Pod', name: r.pod, uid };
  const what = `TokenRequest for ${account}${r.pod === undefined ? '' : ` bound to pod ${r.pod}`}`;
  let token: string | undefined;
  try {
    const tr = await core.createNamespacedServiceAccountToken({
      name: r.serviceAccount,
      namespace: r.namespace,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        metadata: { name: r.serviceAccount, namespace: r.namespace },
        spec: {
          audiences: r.audience === undefined ? [] : [r.audience],
          expirationSeconds: r.ttlSeconds,
          boundObjectRef,
        },
      },
    });
    token = tr.status?.token;
  } catch (e) {
    throw new MeshError('ISTIOD_ERR_KUBE_API', `${what} failed: ${describeKubeError(e)}`, { cause: e });
  }
  if (token === undefined || token === '')
    throw new MeshError('ISTIOD_ERR_KUBE_API', `${what}: the API answered without status.token`);
  return token;
}
