/**
 * One GET to a Kubernetes API with node:http(s), its whole answer read: what the callers that read the API's JSON as
 * it is (list-json.ts) or without loading client-node (the CNI plugin's pod reader) share.
 */
import http from 'node:http';
import https from 'node:https';

/** GETs `url` (http or https, as it says) with `options`; resolves with the status and the body as text. */
export function httpGet(url: URL, options: https.RequestOptions): Promise<{ statusCode: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).get(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
  });
}
