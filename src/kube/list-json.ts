/**
 * A list request that returns the API's JSON as it is. client-node's typed list calls deserialize into model
 * classes (timestamps become Date objects, unknown fields are dropped) while its watch delivers the raw JSON, so
 * an informer fed by a typed list would hold two shapes of the same object; this request goes through the same
 * kubeconfig (server, TLS, credentials) with node:https, so listed and watched objects have one shape.
 */
import type https from 'node:https';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { httpGet } from './http-get.js';

/** GET `path` (a list endpoint, e.g. `/api/v1/pods`); rejects with `statusCode` set when the API answers with an error. */
export async function listJson<T extends KubernetesObject>(
  kc: KubeConfig,
  path: string,
): Promise<KubernetesListObject<T>> {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(cluster.server + path);
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const { statusCode, body } = await httpGet(url, opts);
  if (statusCode !== 200)
    throw Object.assign(new Error(`GET ${path}: ${String(statusCode)} ${body.slice(0, 200)}`), { statusCode });
  try {
    return JSON.parse(body) as KubernetesListObject<T>;
  } catch (e) {
    throw new Error(`GET ${path}: the answer is not JSON: ${(e as Error).message}`);
  }
}
