/**
 * An HTTPS front for an embedded API server: it serves with the API's own certificate (which names 127.0.0.1) on a
 * port of its own and passes every request through, except those the test's `fail` rule answers with a status of
 * its own. A client given `kubeconfig` then sees the API fail exactly where the test says (a 503 for one read, or
 * for everything while the API is "down"), with no change to the server.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { ApiServer } from '../../src/apiserver/api-server.js';
import { PKI_DIR, PKI_FILES } from '../../src/apiserver/auth/cluster-credentials.js';

/** The status to answer a request with instead of passing it on, or undefined to pass it on. */
export type FaultRule = (method: string, path: string) => number | undefined;

export class ApiFront {
  fail: FaultRule = () => undefined;

  private constructor(
    private readonly server: https.Server,
    private readonly target: URL,
    private readonly upstream: https.Agent,
    /** The API's admin kubeconfig, pointed at this front. */
    readonly kubeconfig: KubeConfig,
  ) {}

  /** A front for `api`, whose data directory (for its serving certificate) is `dataDir`. */
  static async start(api: ApiServer, dataDir: string): Promise<ApiFront> {
    const pki = path.join(dataDir, PKI_DIR);
    const [cert, key] = await Promise.all([
      readFile(path.join(pki, PKI_FILES.servingCert)),
      readFile(path.join(pki, PKI_FILES.servingKey)),
    ]);
    const server = https.createServer({ cert, key, minVersion: 'TLSv1.3' });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const admin = new KubeConfig();
    admin.loadFromFile(api.kubeconfigPath);
    const kc = new KubeConfig();
    const port = String((server.address() as AddressInfo).port);
    kc.loadFromOptions({
      clusters: admin.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${port}` })),
      contexts: admin.contexts,
      users: admin.users,
      currentContext: admin.currentContext,
    });
    const front = new ApiFront(server, new URL(api.url), new https.Agent({ ca: api.caCertPem, keepAlive: true }), kc);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => front.handle(req, res));
    return front;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const status = this.fail(req.method ?? 'GET', req.url ?? '/');
    if (status !== undefined) {
      const body = { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'failed by the test', code: status };
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      return;
    }
    const out = https.request(
      {
        host: this.target.hostname,
        port: this.target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent: this.upstream,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
    this.upstream.destroy();
  }
}
