import { access, writeFile } from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';
import { Registry as MetricsRegistry, collectDefaultMetrics, Gauge } from 'prom-client';
import { IstioCertificateService } from '../api/istio/v1/auth/ca_pb.js';
import { AggregatedDiscoveryService } from '../api/envoy/service/discovery/v3/discovery_pb.js';
import { grpcServiceDefinition } from '../lib/grpc-service.js';
import { issueServingCertificate } from '../lib/pki/certificate-authority.js';
import { ensurePrivateDir } from '../lib/pki/private-files.js';
import { MeshError } from '../lib/errors.js';
import { startHttpServer, boundPort } from '../lib/http-server.js';
import type { LogControl } from '../lib/log.js';
import { VERSION } from '../lib/version.js';
import { istiodServingNames, type IstiodConfig } from './config.js';
import { Authenticator } from './ca/authenticate.js';
import { ManifestNodeAuthorizer } from './ca/manifest-node-authorizer.js';
import { KubeCaSecurity } from './kube-ca-security.js';
import { NamespaceController } from './namespace-controller.js';
import { GatewayDeploymentController } from './gateway/gateway-deployment-controller.js';
import { RouteStatusController } from './gateway/route-status-controller.js';
import { IpAutoallocator } from './ip-autoallocator.js';
import { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import { CaServer } from './ca/ca-server.js';
import { authenticationInterceptor } from './ca/authentication-interceptor.js';
import { startGrpcServer } from './grpc-server.js';
import { LocalIssuer } from './ca/local-issuer.js';
import { loadSigningCa } from './ca/signing-ca-source.js';
import { ConfigStore } from './registry/config-store.js';
import { KubeSource } from './registry/kube-source.js';
import { ConfigDirApi } from './registry/config-dir-api.js';
import { IncrementalMeshModel } from './model/incremental-mesh-model.js';
import { AdsServer } from './xds/ads-server.js';
import { SECRET_TYPE, SecretGenerator } from './xds/secret-generator.js';
import { XdsSnapshot } from './xds/xds-snapshot.js';
import { startWebhookServer } from './webhook/webhook-server.js';
import { ValidatingWebhookController } from './webhook/validating-webhook-controller.js';

/** istiod's serving certificate lifetime; it is reissued at every start. */
const SERVING_CERT_TTL_SECONDS = 365 * 24 * 3600;
/** The published trust anchor, for clients' XDS_ROOT_CA / CA_ROOT_CA. */
export const ROOT_CERT_FILE = 'root-cert.pem';

/** Stops each of `started`, last started first, waiting for each. */
async function stopAll(started: readonly { stop(): unknown }[]): Promise<void> {
  for (const s of [...started].reverse()) await s.stop();
}

/** A running istiod: xDS and the CA on the gRPC port, debug, metrics and readiness on the monitoring port. */
export class Istiod {
  readonly ports = { grpc: 0, monitoring: 0, webhook: 0 };
  private monitoring: http.Server | undefined;

  private constructor(
    readonly config: IstiodConfig,
    /** What runs, in start order; stopped in reverse. */
    private readonly started: readonly { stop(): unknown }[],
    readonly issuer: LocalIssuer,
    /** What the model and the CA read: fed by the informers (and stand-ins for refused policies). */
    readonly store: ConfigStore,
    readonly rootCertPath: string,
    /** With `--config-dir`: the embedded API server's admin kubeconfig, for kubectl. */
    readonly kubeconfigPath: string | undefined,
  ) {}

  static async start(cfg: IstiodConfig, logs: LogControl): Promise<Istiod> {
    const log = logs.scope('istiod');
    if (
      cfg.configDir !== undefined &&
      !(await access(cfg.configDir).then(
        () => true,
        () => false,
      ))
    ) {
      throw new MeshError(
        'AMESH_ERR_CONFIG',
        `--config-dir ${cfg.configDir} does not exist (create it, or point at a directory of manifests such as examples/mesh)`,
      );
    }
    await ensurePrivateDir(cfg.stateDir, 'ISTIOD_ERR_STATE', 'istiod state directory');
    const { ca, source: caSource } = await loadSigningCa(cfg, logs.scope('ca'));
    const rootCertPath = path.join(cfg.stateDir, ROOT_CERT_FILE);
    await writeFile(rootCertPath, ca.rootBundlePem, { mode: 0o644 });
    const issuer = await LocalIssuer.loadOrCreate(cfg.stateDir);
    const store = new ConfigStore(logs.scope('store'));
    // Whatever has started is stopped again if a later step fails (a port taken, a bad CA file).
    const started: { stop(): unknown }[] = [store];
    try {
      const configDirApi =
        cfg.configDir === undefined
          ? undefined
          : await ConfigDirApi.start(cfg.configDir, cfg.stateDir, cfg.apiserverAddress, store, logs);
      if (configDirApi !== undefined) started.push(configDirApi);
      const kubeConfig = configDirApi?.kubeconfig ?? cfg.kube;
      if (kubeConfig === undefined)
        throw new MeshError('AMESH_ERR_CONFIG', 'istiod needs --config-dir or a Kubernetes API');
      // istiod's controllers on the API it watches share one informer per resource; started once all have asked.
      const informers = new SharedInformerFactory(kubeConfig, logs.scope('informers'));
      started.push(informers);
      // As on a cluster, every namespace of the embedded API gets istio-ca-root-cert (the CA keeps its local issuer).
      let rootPublisher: NamespaceController | undefined;
      if (configDirApi !== undefined) {
        rootPublisher = new NamespaceController(
          kubeConfig,
          informers,
          ca.rootBundlePem,
          logs.scope('namespace-controller'),
        );
        rootPublisher.start();
        started.push(rootPublisher);
      }
      const kubeCa =
        cfg.kube === undefined ? undefined : KubeCaSecurity.start(cfg, cfg.kube, ca.rootBundlePem, informers, logs);
      if (kubeCa !== undefined) started.push(kubeCa);
      if (cfg.ipAutoallocate !== undefined) {
        const allocator = new IpAutoallocator(kubeConfig, informers, cfg.ipAutoallocate, logs.scope('ip-autoallocate'));
        allocator.start();
        started.push(allocator);
      }
      const webhookController = new ValidatingWebhookController(
        kubeConfig,
        informers,
        ca.rootBundlePem,
        cfg.revision,
        cfg.rootNamespace,
        logs.scope('validation'),
      );
      webhookController.start();
      started.push(webhookController);
      const gatewayController = new GatewayDeploymentController(kubeConfig, informers, cfg, logs.scope('gateway'));
      gatewayController.start();
      started.push(gatewayController);
      const routeStatus = new RouteStatusController(kubeConfig, informers, logs.scope('gateway'));
      routeStatus.start();
      started.push(routeStatus);
      // Gateways' certificates over SDS: names istiod verified in the model, or allowed by a SubjectAccessReview. The
      // generator's informer must be asked for before the informers start; what it reads comes after.
      const late: { ads?: AdsServer; model?: IncrementalMeshModel } = {};
      const secrets = new SecretGenerator(
        kubeConfig,
        informers,
        (namespace) =>
          new Set(
            [...(late.model?.waypoints ?? new Map<string, never>())]
              .filter(([name]) => name.startsWith(`${namespace}/`))
              .flatMap(([, w]) => w.listeners.flatMap((l) => [...l.credentialNames, ...(l.clientCaNames ?? [])])),
          ),
        () => late.ads?.refresh(SECRET_TYPE),
        logs.scope('sds'),
      );
      informers.start();
      const auth = kubeCa?.authenticator ?? new Authenticator(cfg.jwtRules, issuer.publicJwk, cfg.tokenAudiences);
      const metrics = new MetricsRegistry();
      const ads = new AdsServer(auth, metrics, logs.scope('ads'), new Map([[SECRET_TYPE, secrets]]));
      late.ads = ads;
      const modelLog = logs.scope('model');
      const model = new IncrementalMeshModel({
        clusterId: cfg.clusterId,
        trustDomain: cfg.trustDomain,
        rootNamespace: cfg.rootNamespace,
        domainSuffix: cfg.domainSuffix,
        ipAutoallocate: cfg.ipAutoallocate !== undefined,
      });
      late.model = model;
      const xds = new XdsSnapshot(model);
      /** Until the store holds every object (every informer synced), nothing is served. */
      let ready = false;
      store.on('change', (changes) => {
        const c = model.update(changes);
        for (const w of c.warnings) modelLog.warn(w);
        const touched = xds.apply(c);
        if (ready) ads.update(xds.snapshot, touched);
        // Per batch of API events only at debug level, as they may come many a second.
        modelLog.debug(
          { ...xds.size, changed: c.addresses.size + c.authorizations.size + c.waypoints.size },
          'model updated',
        );
      });
      const markReady = (): void => {
        ready = true;
        ads.update(xds.snapshot);
      };
      const kube = new KubeSource(kubeConfig, store, logs.scope('kube'), cfg.rootNamespace);
      started.push(kube);
      kube.start();
      const synced = Promise.all([kube.synced, kubeCa?.synced, rootPublisher?.synced]).then(() => {
        markReady();
        log.info({ server: kubeConfig.getCurrentCluster()?.server }, 'every informer synced; serving xDS');
      });
      // The embedded API is local and already holds the directory: serve only once it is all in the store.
      if (configDirApi !== undefined) await synced;
      collectDefaultMetrics({ register: metrics });
      new Gauge({
        name: 'istio_build',
        help: 'Istio component build info',
        labelNames: ['component', 'tag'],
        registers: [metrics],
      }).set({ component: 'pilot', tag: VERSION }, 1);
      const caServer = new CaServer(
        cfg,
        ca,
        auth,
        kubeCa?.nodeAuthorizer ?? new ManifestNodeAuthorizer(store),
        metrics,
        logs.scope('ca'),
      );
      const serving = await issueServingCertificate(ca, istiodServingNames(cfg), SERVING_CERT_TTL_SECONDS);
      const grpcServer = await startGrpcServer(
        {
          address: cfg.grpcAddress,
          keyPem: serving.keyPem,
          certChainPem: serving.chain.slice(0, -1).join(''),
          limits: cfg.grpcLimits,
          interceptors: [authenticationInterceptor(auth, logs.scope('ca'), (method) => caServer.countRejected(method))],
          addServices: (server) => {
            server.addService(grpcServiceDefinition(IstioCertificateService), caServer.handlers);
            server.addService(grpcServiceDefinition(AggregatedDiscoveryService), ads.handlers);
          },
        },
        log,
      );
      started.push(grpcServer);
      const webhook = await startWebhookServer(
        cfg.webhookAddress,
        { keyPem: serving.keyPem, certChainPem: serving.chain.slice(0, -1).join('') },
        logs.scope('validation'),
      );
      started.push(webhook);
      const ist = new Istiod(cfg, started, issuer, store, rootCertPath, configDirApi?.kubeconfigPath);
      ist.ports.grpc = grpcServer.port;
      ist.ports.webhook = webhook.port;
      ist.monitoring = await startHttpServer(
        cfg.monitoringAddress,
        {
          '/ready': () =>
            ready
              ? { status: 200, body: 'ready\n' }
              : { status: 503, body: 'not ready: waiting for the Kubernetes informers to sync\n' },
          '/debug/': () => ({ status: 200, body: '/debug/connections\n' }),
          '/debug/connections': () => ({
            status: 200,
            body: JSON.stringify(ads.debug(), null, 2),
            type: 'application/json',
          }),
          '/metrics': async () => ({ status: 200, body: await metrics.metrics(), type: metrics.contentType }),
        },
        'monitoring',
      );
      ist.ports.monitoring = boundPort(ist.monitoring);
      log.info(
        {
          version: VERSION,
          grpc: ist.ports.grpc,
          monitoring: ist.ports.monitoring,
          webhook: ist.ports.webhook,
          root: rootCertPath,
          ca: caSource,
          configDir: cfg.configDir,
          kube: kubeConfig.getCurrentCluster()?.server,
          kubeconfig: ist.kubeconfigPath,
        },
        'istiod started',
      );
      return ist;
    } catch (e) {
      await stopAll(started);
      throw e;
    }
  }

  async stop(): Promise<void> {
    this.monitoring?.close();
    await stopAll(this.started);
  }
}
