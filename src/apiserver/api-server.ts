/**
 * `amesh apiserver`: the embedded Kubernetes API server for one machine. It composes the lmdb storage, the
 * resource store every verb goes through (`resource-store.ts`) and its garbage collector, the cluster
 * credentials in the data directory, bearer-token authentication, RBAC over the stored roles and bindings (the
 * bootstrap policy reconciled at start, ClusterRoles aggregated, escalation checked), and the HTTPS request
 * pipeline. `kubectl`, @kubernetes/client-node and python's kubernetes client talk to it as to a real cluster.
 */
import https from 'node:https';
import { isIP, type AddressInfo } from 'node:net';
import path from 'node:path';
import type { LogControl, Logger } from '../lib/log.js';
import { MeshError } from '../lib/errors.js';
import { ensurePrivateDir } from '../lib/pki/private-files.js';
import { VERSION } from '../lib/version.js';
import type { ApiServerConfig } from './config.js';
import { Storage } from './storage.js';
import { ResourceStore } from './resource-store.js';
import { GarbageCollector } from './garbage-collector.js';
import { WebhookAdmission } from './admission/webhook-admission.js';
import { bootstrapCluster } from './bootstrap.js';
import { ClusterIpAllocator } from './cluster-ip-allocator.js';
import { NodePortAllocator } from './node-port-allocator.js';
import { findKind, servedKinds } from './kinds.js';
import { CustomResourceDefinitionController } from './custom-resource-definition-controller.js';
import type { KindInfo } from './kind-info.js';
import { ApiError } from './api-error.js';
import type { KubeObject } from './kube-object.js';
import {
  loadOrCreateClusterCredentials,
  loopbackForWildcard,
  type ClusterCredentials,
} from './auth/cluster-credentials.js';
import { Authenticator } from './auth/authenticator.js';
import { DEFAULT_ISSUER, ServiceAccountTokenIssuer, type ObjectLookups } from './auth/service-account-token.js';
import { reviewToken } from './auth/token-review.js';
import { RbacAuthorizer, forbidden, type Attributes } from './auth/authorizer.js';
import { reviewSubjectAccess } from './auth/subject-access-review.js';
import { impersonatedUser } from './auth/impersonation.js';
import { reviewSelf, reviewSelfSubjectAccess } from './auth/self-reviews.js';
import type { RequestInfo } from './http/request-info.js';
import { apiHandler } from './http/api-handler.js';
import { OpenApiDocuments } from './http/openapi.js';
import type { UserInfo } from './auth/user-info.js';
import { RbacCache } from './rbac/rbac-cache.js';
import { EscalationCheck } from './rbac/escalation-check.js';
import { reconcileBootstrapPolicy } from './rbac/bootstrap-reconcile.js';
import { ClusterRoleAggregation } from './rbac/cluster-role-aggregation.js';

/** The store lives in `DATA_DIR/store`; credentials and the kubeconfig beside it. */
const STORE_DIR = 'store';

/** What `/version` reports: the Kubernetes minor whose API this server follows, and amesh's version. */
const KUBE_VERSION = { major: '1', minor: '32', gitVersion: `v1.32.0+amesh.${VERSION}` } as const;

const kind = (group: string, plural: string): KindInfo => findKind(group, 'v1', plural) as KindInfo;
const PODS = kind('', 'pods');

/** What the authorizer decides on, from what the request asks for. */
function attributes(user: UserInfo, info: RequestInfo): Attributes {
  if (!info.resource) return { user, verb: info.verb, path: info.path };
  return {
    user,
    verb: info.verb,
    apiGroup: info.group,
    resource: info.plural,
    ...(info.subresource !== undefined ? { subresource: info.subresource } : {}),
    ...(info.namespace !== undefined ? { namespace: info.namespace } : {}),
    ...(info.name !== undefined ? { name: info.name } : {}),
  };
}

export class ApiServer {
  private constructor(
    private readonly server: https.Server,
    private readonly storage: Storage,
    private readonly gc: GarbageCollector,
    private readonly rbac: RbacCache,
    private readonly aggregation: ClusterRoleAggregation,
    private readonly crds: CustomResourceDefinitionController,
    private readonly credentials: ClusterCredentials,
    private readonly log: Logger,
  ) {}

  /** The URL clients reach this server at (as the kubeconfig names it). */
  get url(): string {
    return this.credentials.serverUrl;
  }

  /** `DATA_DIR/kubeconfig`: the admin user's kubeconfig (mode 0600). */
  get kubeconfigPath(): string {
    return this.credentials.kubeconfigPath;
  }

  get caCertPem(): string {
    return this.credentials.caCertPem;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  static async start(cfg: ApiServerConfig, logs: LogControl): Promise<ApiServer> {
    const log = logs.scope('apiserver');
    await ensurePrivateDir(cfg.dataDir, 'APISERVER_ERR_DATA_DIR', 'API server data directory');
    const storage = await Storage.open(path.join(cfg.dataDir, STORE_DIR), { historyLimit: cfg.eventHistory });
    try {
      return await ApiServer.serve(cfg, logs, log, storage);
    } catch (e) {
      await storage.close();
      throw e;
    }
  }

  private static async serve(
    cfg: ApiServerConfig,
    logs: LogControl,
    log: Logger,
    storage: Storage,
  ): Promise<ApiServer> {
    const clusterIps = new ClusterIpAllocator(cfg.serviceCidr);
    const nodePorts = new NodePortAllocator();
    const store = new ResourceStore(storage, clusterIps, nodePorts, logs.scope('store'));
    const services = store.list(kind('', 'services'), undefined).items;
    clusterIps.rebuild(services);
    nodePorts.rebuild(services);
    const gc = new GarbageCollector(storage, store, logs.scope('gc'));
    store.orphanDependents = (uid) => gc.orphan(uid);
    store.admission = new WebhookAdmission(
      { list: (k, ns) => store.list(k, ns).items, find: (k, ns, name) => store.find(k, ns, name) },
      logs.scope('admission'),
    );

    // Listen first: the port may be kernel-chosen, and the serving certificate and kubeconfig name it.
    const server = https.createServer({ minVersion: 'TLSv1.3' });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) =>
        reject(
          new MeshError(
            'AMESH_ERR_CONFIG',
            `cannot listen on ${cfg.listen.host}:${cfg.listen.port}: ${e.code ?? e.message}${e.code === 'EADDRINUSE' ? ' (is another apiserver running? pass a different --listen)' : ''}`,
          ),
        ),
      );
      server.listen(cfg.listen.port, cfg.listen.host, () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    const credentials = await loadOrCreateClusterCredentials({
      dataDir: cfg.dataDir,
      listenHost: cfg.listen.host,
      listenPort: port,
      serviceIp: clusterIps.kubernetesServiceIp,
    });
    server.setSecureContext({
      cert: credentials.servingCertPem,
      key: credentials.servingKeyPem,
      minVersion: 'TLSv1.3',
    });

    const lookups: ObjectLookups = {
      getServiceAccount: (ns, name) => store.find(kind('', 'serviceaccounts'), ns, name),
      getPod: (ns, name) => store.find(PODS, ns, name),
      getSecret: (ns, name) => store.find(kind('', 'secrets'), ns, name),
      getNode: (name) => store.find(kind('', 'nodes'), undefined, name),
    };
    const authenticator = new Authenticator({
      adminToken: credentials.adminToken,
      key: credentials.serviceAccountKey,
      issuer: DEFAULT_ISSUER,
      apiAudiences: [DEFAULT_ISSUER],
      lookups,
      log: logs.scope('authn'),
    });
    const tokens = new ServiceAccountTokenIssuer({
      key: credentials.serviceAccountKey,
      issuer: DEFAULT_ISSUER,
      apiAudiences: [DEFAULT_ISSUER],
      lookups,
    });
    const openapi = new OpenApiDocuments();
    const rbac = RbacCache.follow(store, log);
    const authorizer = new RbacAuthorizer(rbac);
    const escalation = new EscalationCheck(rbac, authorizer);
    store.guardWrite = (k, obj, old, user) => escalation.check(k, obj, old, user);
    const aggregation = new ClusterRoleAggregation(store, rbac, logs.scope('clusterrole-aggregation'));

    let ready = false;
    const handler = apiHandler({
      store,
      openapi,
      version: { ...KUBE_VERSION, platform: `${process.platform}/${process.arch}` },
      serverAddress: () => `${cfg.listen.host}:${port}`,
      ready: () => ready,
      authenticate: (h) => authenticator.authenticate(h),
      impersonate: (user, headers) => impersonatedUser(user, headers, authorizer),
      authorize: (user, info) => {
        const a = attributes(user, info);
        const d = authorizer.authorize(a);
        if (!d.allowed) throw forbidden(a, d.reason);
      },
      computed: {
        tokenRequest: (ns, name, body) => tokens.createToken(ns, name, body),
        review: (k: KindInfo, body: KubeObject, user: UserInfo) => {
          if (k.kind === 'TokenReview') return reviewToken(authenticator, body);
          if (k.kind === 'SubjectAccessReview') return Promise.resolve(reviewSubjectAccess(body, authorizer));
          if (k.kind === 'SelfSubjectAccessReview')
            return Promise.resolve(reviewSelfSubjectAccess(body, user, authorizer));
          if (k.kind === 'SelfSubjectReview') return Promise.resolve(reviewSelf(user));
          throw new ApiError('NotFound', 'the server could not find the requested resource');
        },
      },
      log,
    });
    server.on('request', handler);
    server.on('tlsClientError', (e: Error) => log.debug({ err: e.message }, 'TLS handshake failed'));
    gc.start();
    const crds = new CustomResourceDefinitionController(store, logs.scope('crd'));
    await crds.start();
    // The EndpointSlice needs an address: a wildcard or a name listens on loopback too.
    const host = isIP(cfg.listen.host) === 0 ? '127.0.0.1' : loopbackForWildcard(cfg.listen.host);
    await bootstrapCluster(store, { serviceIp: clusterIps.kubernetesServiceIp, host, port }, log);
    await reconcileBootstrapPolicy(store, logs.scope('rbac-bootstrap'));
    await aggregation.start();
    ready = true;
    log.info(
      {
        url: credentials.serverUrl,
        kubeconfig: credentials.kubeconfigPath,
        kinds: servedKinds().length,
        revision: storage.revision(),
      },
      'API server ready',
    );
    return new ApiServer(server, storage, gc, rbac, aggregation, crds, credentials, log);
  }

  async stop(): Promise<void> {
    this.gc.stop();
    this.rbac.stop();
    await this.aggregation.stop();
    await this.crds.stop();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.storage.close();
    this.log.info('API server stopped');
  }
}
