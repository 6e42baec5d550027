import * as k8s from '@kubernetes/client-node';

/** A TokenRequest token for istio-system/ztunnel (audience istio-ca), creating the account if the API lacks it. */
export async function ztunnelToken(kc: k8s.KubeConfig): Promise<string> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core
    .createNamespacedServiceAccount({ namespace: 'istio-system', body: { metadata: { name: 'ztunnel' } } })
    .catch((e: unknown) => {
      if ((e as { code?: number }).code !== 409) throw e;
    });
  const tr = await core.createNamespacedServiceAccountToken({
    name: 'ztunnel',
    namespace: 'istio-system',
    body: { spec: { audiences: ['istio-ca'] } },
  });
  return tr.status?.token ?? '';
}
