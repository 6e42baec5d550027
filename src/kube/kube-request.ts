/**
 * One JSON request to a Kubernetes API through a kubeconfig (server, TLS, credentials), the answer's body parsed:
 * for callers that handle objects of any kind as plain JSON (the installer creates, replaces, lists and deletes
 * Deployments, ClusterRoles and CRDs alike), which client-node's typed clients would turn into model classes.
 */
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export interface KubeAnswer {
  readonly statusCode: number;
  /** The parsed JSON body, or the text when it is not JSON. */
  readonly body: unknown;
}

/**
 * Sends `method path` with `body` as JSON (of `contentType`, e.g. a merge patch's); resolves with any HTTP answer,
 * rejects only when none came.
 */
export async function kubeRequest(
  kc: KubeConfig,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<KubeAnswer> {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(cluster.server.replace(/\/+$/, '') + path);
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  opts.method = method;
  opts.headers = {
    ...(opts.headers as Record<string, string> | undefined),
    accept: 'application/json',
    ...(payload === undefined ? {} : { 'content-type': contentType, 'content-length': payload.length }),
  };
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).request(url, opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // Not JSON (a proxy's error page): the caller gets the text.
        }
        resolve({ statusCode: res.statusCode ?? 0, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}
