/**
 * The ServiceAccount admission plugin's token mount (kubernetes plugin/pkg/admission/serviceaccount/admission.go):
 * a pod that does not opt out (its own `automountServiceAccountToken`, else its ServiceAccount's) gets a projected
 * volume `kube-api-access-<5 random>` with a bound token (`token`, 3607 s), the cluster's CA (`ca.crt` from the
 * namespace's `kube-root-ca.crt` ConfigMap) and its namespace (`namespace`), mounted read-only at
 * `/var/run/secrets/kubernetes.io/serviceaccount` in every container and init container that has nothing mounted
 * there already; mirror pods (a kubelet's copies of its static pods) get none. Unlike the plugin, a pod whose ServiceAccount does not exist is admitted: the kubelet's token
 * request then fails and says so, and the pod waits for the account.
 */
import { randomSafeString } from '../lib/safe-encode.js';
import type { KubeObject } from './kube-object.js';
import { asArray, asObject, objectField } from './validation/json-fields.js';
import type { JsonObject } from './validation/json-fields.js';

export const SERVICE_ACCOUNT_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
const VOLUME_PREFIX = 'kube-api-access-';
/** The token's lifetime: an hour plus 7 s, which marks the tokens kube-apiserver may extend (serviceaccount.WarnOnlyBoundTokenExpirationSeconds). */
const TOKEN_SECONDS = 3607;
const ROOT_CA_CONFIG_MAP = 'kube-root-ca.crt';
/** A kubelet's copy of a static pod, which runs without a token: the plugin leaves mirror pods alone. */
const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

function tokenVolume(name: string): JsonObject {
  return {
    name,
    projected: {
      defaultMode: 0o644,
      sources: [
        { serviceAccountToken: { expirationSeconds: TOKEN_SECONDS, path: 'token' } },
        { configMap: { name: ROOT_CA_CONFIG_MAP, items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        {
          downwardAPI: {
            items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
          },
        },
      ],
    },
  };
}

/** Adds the token volume and mounts to pod `obj` (its spec defaulted), given its ServiceAccount if it exists. */
export function mountServiceAccountToken(obj: KubeObject, serviceAccount: KubeObject | undefined): void {
  if (obj.metadata.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) return;
  const spec = objectField(obj, 'spec');
  const own = spec['automountServiceAccountToken'];
  const fromAccount = (serviceAccount as JsonObject | undefined)?.['automountServiceAccountToken'];
  if (own === false || (own === undefined && fromAccount === false)) return;
  const containers = [...(asArray(spec['initContainers']) ?? []), ...(asArray(spec['containers']) ?? [])]
    .map((c) => asObject(c))
    .filter((c): c is JsonObject => c !== undefined);
  const needing = containers.filter(
    (c) => !(asArray(c['volumeMounts']) ?? []).some((m) => asObject(m)?.['mountPath'] === SERVICE_ACCOUNT_MOUNT_PATH),
  );
  if (needing.length === 0) return;
  const volumes = asArray(spec['volumes']) ?? [];
  const existing = volumes
    .map((v) => asObject(v)?.['name'])
    .find((n) => typeof n === 'string' && n.startsWith(VOLUME_PREFIX));
  const name = typeof existing === 'string' ? existing : VOLUME_PREFIX + randomSafeString(5);
  if (existing === undefined) spec['volumes'] = [...volumes, tokenVolume(name)];
  for (const c of needing)
    c['volumeMounts'] = [
      ...(asArray(c['volumeMounts']) ?? []),
      { name, readOnly: true, mountPath: SERVICE_ACCOUNT_MOUNT_PATH },
    ];
}
