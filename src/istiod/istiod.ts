import { access, writeFile } from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';
import { Registry as MetricsRegistry, collectDefaultMetrics, Gauge } from 'prom-client';
import { IstioCertificateService } from '../api/istio/v1/auth/ca_pb.js';
import { AggregatedDiscoveryService } from '../api/envoy/service/discovery/v3/discovery_pb.js';
import { grpcServiceDefinition } from '../lib/grpc-service.js';
import { CertificateAuthority, issueServingCertificate, PLUGIN_CA_FILES, writePluginCaDir } from '../lib/pki/certificate-authority.js';
import { ensurePrivateDir } from '../lib/pki/private-files.js';
import { isMeshError, MeshError } from '../lib/errors.js';
import { startHttpServer, boundPort } from '../lib/http-server.js';
import type { LogControl } from '../lib/log.js';
import { VERSION } from '../lib/version.js';
import { ISTIOD_SERVING_NAMES, type IstiodConfig } from './config.js';
import { Authenticator } from './ca/authenticate.js';
import { ManifestNodeAuthorizer } from './ca/manifest-node-authorizer.js';
import { KubeCaSecurity } from './kube-ca-security.js';
import { CaServer } from './ca/ca-server.js';
import { authenticationInterceptor } from './ca/authentication-interceptor.js';
import { startGrpcServer, type RunningGrpcServer } from './grpc-server.js';
import { LocalIssuer } from './ca/local-issuer.js';
import { Registry } from './registry/registry.js';
import { KubeSource } from './registry/kube-source.js';
import { IncrementalMeshModel } from './model/incremental-mesh-model.js';
import { AdsServer } from './xds/ads-server.js';
import { XdsSnapshot } from './xds/xds-snapshot.js';

/** istiod's serving certificate lifetime; it is reissued at every start. */
const SERVING_CERT_TTL_SECONDS = 365 * 24 * 3600;
/** The published trust anchor, for clients' XDS_ROOT_CA / CA_ROOT_CA. */
export const ROOT_CERT_FILE = 'root-cert.pem';

/** Loads the plug-in CA from `--ca-dir`, or a self-signed one created once in the state directory. */
async function loadSigningCa(cfg: IstiodConfig): Promise<CertificateAuthority> {
  if (cfg.caDir !== undefined) return CertificateAuthority.fromPluginDir(cfg.caDir);
  const dir = path.join(cfg.stateDir, 'ca');
  const exists = await access(path.join(dir, PLUGIN_CA_FILES.caKey)).then(() => true, () => false);
  if (!exists) {
    try {
      await writePluginCaDir(dir, cfg.trustDomain);
    } catch (e) {
      if (isMeshError(e)) throw e;
      throw new MeshError('ISTIOD_ERR_STATE', `cannot create the self-signed CA in ${dir}: ${(e as Error).message}`);
    }
  }
  return CertificateAuthority.fromPluginDir(dir);
}

/** A running istiod: CA (and, next, xDS) on the gRPC port, debug/metrics/ready on the monitoring port. */
export class Istiod {
  readonly ports = { grpc: 0, monitoring: 0 };
  private monitoring: http.Server | undefined;

  private constructor(
    readonly config: IstiodConfig,
    private readonly grpcServer: RunningGrpcServer,
    private readonly kube: KubeSource | undefined,
    private readonly kubeCa: KubeCaSecurity | undefined,
    readonly issuer: LocalIssuer,
    readonly registry: Registry,
    readonly rootCertPath: string,
  ) {}

  static async start(cfg: IstiodConfig, logs: LogControl): Promise<Istiod> {
    const log = logs.scope('istiod');
    if (cfg.configDir !== undefined && !(await access(cfg.configDir).then(() => true, () => false))) {
      throw new MeshError('AMESH_ERR_CONFIG', `--config-dir ${cfg.configDir} does not exist (create it, or point at a directory of manifests such as examples/mesh)`);
    }
    await ensurePrivateDir(cfg.stateDir, 'ISTIOD_ERR_STATE', 'istiod state directory');
    const ca = await loadSigningCa(cfg);
    const rootCertPath = path.join(cfg.stateDir, ROOT_CERT_FILE);
    await writeFile(rootCertPath, ca.rootBundlePem, { mode: 0o644 });
    const issuer = await LocalIssuer.loadOrCreate(cfg.stateDir);
    const kubeCa = cfg.kube === undefined ? undefined : KubeCaSecurity.start(cfg, cfg.kube, ca.rootBundlePem, logs);
    const auth = kubeCa?.authenticator ?? new Authenticator(cfg.jwtRules, issuer.publicJwk, cfg.tokenAudiences);
    const registry = new Registry(cfg.configDir, logs.scope('registry'));
    const metrics = new MetricsRegistry();
    const ads = new AdsServer(auth, metrics, logs.scope('ads'));
    const modelLog = logs.scope('model');
    const model = new IncrementalMeshModel({ clusterId: cfg.clusterId, trustDomain: cfg.trustDomain, rootNamespace: cfg.rootNamespace, domainSuffix: cfg.domainSuffix });
    const xds = new XdsSnapshot(model);
    /** Until the registry holds every object (the directory read, every informer synced), nothing is served. */
    let ready = false;
    registry.on('change', (changes) => {
      const c = changes === undefined ? model.replaceAll(registry.all()) : model.update(changes);
      for (const w of c.warnings) modelLog.warn(w);
      const touched = xds.apply(c);
      if (ready) ads.update(xds.snapshot, changes === undefined ? undefined : touched);
      // One line per directory reload; per batch of API events only at debug level, as they may come many a second.
      modelLog[changes === undefined ? 'info' : 'debug']({ ...xds.size, changed: c.addresses.size + c.authorizations.size }, 'model rebuilt');
    });
    const markReady = (): void => {
      ready = true;
      ads.update(xds.snapshot);
    };
    const kube = cfg.kube === undefined ? undefined : new KubeSource(cfg.kube, registry, logs.scope('kube'));
    if (kube === undefined) {
      await registry.reload();
      registry.watch();
      markReady();
    } else {
      kube.start();
      void Promise.all([kube.synced, kubeCa?.synced]).then(() => {
        markReady();
        log.info({ server: cfg.kube?.getCurrentCluster()?.server }, 'every informer synced; serving xDS');
      });
    }
    collectDefaultMetrics({ register: metrics });
    new Gauge({ name: 'istio_build', help: 'Istio component build info', labelNames: ['component', 'tag'], registers: [metrics] }).set({ component: 'pilot', tag: VERSION }, 1);
    const caServer = new CaServer(cfg, ca, auth, kubeCa?.nodeAuthorizer ?? new ManifestNodeAuthorizer(registry), metrics, logs.scope('ca'));
    const serving = await issueServingCertificate(ca, ISTIOD_SERVING_NAMES, SERVING_CERT_TTL_SECONDS);
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
    const grpcPort = grpcServer.port;
    const ist = new Istiod(cfg, grpcServer, kube, kubeCa, issuer, registry, rootCertPath);
    ist.ports.grpc = grpcPort;
    ist.monitoring = await startHttpServer(cfg.monitoringAddress, {
      '/ready': () => (ready ? { status: 200, body: 'ready\n' } : { status: 503, body: 'not ready: waiting for the Kubernetes informers to sync\n' }),
      '/debug/': () => ({ status: 200, body: '/debug/connections\n' }),
      '/debug/connections': () => ({ status: 200, body: JSON.stringify(ads.debug(), null, 2), type: 'application/json' }),
      '/metrics': async () => ({ status: 200, body: await metrics.metrics(), type: metrics.contentType }),
    }, 'monitoring');
    ist.ports.monitoring = boundPort(ist.monitoring);
    log.info({ version: VERSION, grpc: grpcPort, monitoring: ist.ports.monitoring, root: rootCertPath, configDir: cfg.configDir, kube: cfg.kube?.getCurrentCluster()?.server }, 'istiod started');
    return ist;
  }

  async stop(): Promise<void> {
    this.registry.stop();
    this.monitoring?.close();
    this.grpcServer.stop();
    await Promise.all([this.kube?.stop(), this.kubeCa?.stop()]);
  }
}
