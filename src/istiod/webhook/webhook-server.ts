/**
 * istiod's HTTPS webhook port (15017, pilot-discovery's `--httpsAddr`; the `istiod` Service's 443 `https-webhook`):
 * `/validate` takes an AdmissionReview as kube-apiserver posts it and answers with `config-validation.ts`, as istio
 * `pkg/webhooks/validation/server/server.go` serves it: a request with no body is 400, one that is not
 * `application/json` is 415. The certificate is istiod's serving certificate for `istiod.<its namespace>.svc`, which
 * the validating webhook configuration's `caBundle` anchors.
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { ListenAddress } from '../../lib/address.js';
import { MeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { validateAdmissionReview } from './config-validation.js';

/** kube-apiserver sends objects of at most 3 MiB; a review holds two of them. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export interface WebhookServer {
  readonly port: number;
  stop(): Promise<void>;
}

export async function startWebhookServer(
  addr: ListenAddress,
  tls: { readonly keyPem: string; readonly certChainPem: string },
  log: Logger,
): Promise<WebhookServer> {
  const server = https.createServer({ key: tls.keyPem, cert: tls.certChainPem, minVersion: 'TLSv1.3' }, (req, res) => {
    const send = (status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/validate' || req.method !== 'POST') {
      send(404, 'not found\n');
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        send(413, 'request body too large\n');
        req.destroy();
      } else chunks.push(c);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return;
      if (size === 0) {
        send(400, 'no body found\n');
        return;
      }
      if ((req.headers['content-type'] ?? '').split(';')[0]?.trim() !== 'application/json') {
        send(415, 'invalid Content-Type, want `application/json`\n');
        return;
      }
      const answer = validateAdmissionReview(Buffer.concat(chunks).toString('utf8'));
      const response = answer.response as { allowed: boolean; status?: { message: string } };
      if (!response.allowed) log.info({ reason: response.status?.message }, 'configuration refused');
      send(200, JSON.stringify(answer), 'application/json');
    });
  });
  server.on('tlsClientError', (e) => log.debug({ err: e.message }, 'webhook TLS handshake failed'));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        new MeshError(
          'AMESH_ERR_CONFIG',
          `cannot listen for the validation webhook on ${addr.host}:${String(addr.port)}: ${e.code ?? e.message}${e.code === 'EADDRINUSE' ? ' (is another istiod running? pass a different --webhook-address)' : ''}`,
        ),
      ),
    );
    server.listen(addr.port, addr.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
