import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { KubeObject } from '../../src/apiserver/kube-object.js';
import { Authenticator } from '../../src/apiserver/auth/authenticator.js';
import {
  loadOrCreateClusterCredentials,
  type ClusterCredentials,
} from '../../src/apiserver/auth/cluster-credentials.js';
import { ServiceAccountTokenIssuer, type ObjectLookups } from '../../src/apiserver/auth/service-account-token.js';
import { CapturedLogs } from './captured-logs.js';

/**
 * Real cluster credentials in a temporary data directory, a token issuer and an authenticator over a small
 * object table, and a clock tests can move: what the API server's auth modules run on, without HTTP or a store.
 */
export class AuthFixture {
  readonly objects = new Map<string, KubeObject>();
  readonly logs = new CapturedLogs('apiserver');
  /** Offset added to the real clock, in ms. */
  clockOffsetMs = 0;
  readonly lookups: ObjectLookups = {
    getServiceAccount: (ns, name) => this.objects.get(`serviceaccounts/${ns}/${name}`),
    getPod: (ns, name) => this.objects.get(`pods/${ns}/${name}`),
    getSecret: (ns, name) => this.objects.get(`secrets/${ns}/${name}`),
    getNode: (name) => this.objects.get(`nodes//${name}`),
  };
  readonly issuer: ServiceAccountTokenIssuer;
  readonly authenticator: Authenticator;

  private constructor(readonly creds: ClusterCredentials) {
    const now = (): number => Date.now() + this.clockOffsetMs;
    this.issuer = new ServiceAccountTokenIssuer({ key: creds.serviceAccountKey, lookups: this.lookups, now });
    this.authenticator = new Authenticator({
      adminToken: creds.adminToken,
      key: creds.serviceAccountKey,
      issuer: this.issuer.issuer,
      apiAudiences: this.issuer.apiAudiences,
      lookups: this.lookups,
      log: this.logs.control.scope('authn'),
      now,
    });
  }

  static async create(t: { after: (fn: () => Promise<void>) => void }): Promise<AuthFixture> {
    const base = await mkdtemp(path.join(tmpdir(), 'amesh-auth-'));
    t.after(() => rm(base, { recursive: true, force: true }));
    const creds = await loadOrCreateClusterCredentials({
      dataDir: path.join(base, 'data'),
      listenHost: '127.0.0.1',
      listenPort: 6443,
      serviceIp: '10.96.0.1',
    });
    return new AuthFixture(creds);
  }

  /** Stores a new object (a fresh uid each time, as a re-created object gets) and returns it. */
  put(
    resource: 'serviceaccounts' | 'pods' | 'secrets' | 'nodes',
    namespace: string,
    name: string,
    extra: Record<string, unknown> = {},
  ): KubeObject {
    const kind = { serviceaccounts: 'ServiceAccount', pods: 'Pod', secrets: 'Secret', nodes: 'Node' }[resource];
    const obj: KubeObject = {
      apiVersion: 'v1',
      kind,
      metadata: { name, ...(namespace !== '' ? { namespace } : {}), uid: randomUUID() },
      ...extra,
    };
    this.objects.set(`${resource}/${namespace}/${name}`, obj);
    return obj;
  }

  remove(resource: 'serviceaccounts' | 'pods' | 'secrets' | 'nodes', namespace: string, name: string): void {
    this.objects.delete(`${resource}/${namespace}/${name}`);
  }

  /** A one-hour token for `namespace/name` issued two hours ago: expired now. */
  async expiredToken(namespace: string, name: string): Promise<string> {
    this.clockOffsetMs = -2 * 3600_000;
    try {
      return await this.token(namespace, name);
    } finally {
      this.clockOffsetMs = 0;
    }
  }

  /** A TokenRequest's token for `namespace/name`. */
  async token(namespace: string, name: string, spec: Record<string, unknown> = {}): Promise<string> {
    const tr = await this.issuer.createToken(namespace, name, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec,
    });
    return (tr['status'] as { token: string }).token;
  }
}
