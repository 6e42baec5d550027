import type http from 'node:http';
import { EventEmitter } from 'node:events';
import { describeError, type MeshError } from '../lib/errors.js';
import { startHttpServer, boundPort } from '../lib/http-server.js';
import type { LogControl, Logger } from '../lib/log.js';
import { VERSION } from '../lib/version.js';
import type { InpodConfig, ZtunnelConfig } from './config.js';
import { SecretManager } from './identity/secret-manager.js';
import { ProxyState } from './state/proxy-state.js';
import { changesWorkloadsOn, mayAlterPolicyDecision } from './state/state-change.js';
import type { CaClient } from './identity/ca-client.js';
import { processMetrics, ZtunnelMetrics } from './admin/metrics.js';
import type { MetricsRegistry } from './admin/prom-client-core.js';
import { registerCertificateMetrics } from './admin/certificate-metrics.js';
import { configDump } from './admin/config-dump.js';
import { ConnectionManager } from './proxy/connection-manager.js';
import { HbonePool, poolSettings } from './proxy/hbone-pool.js';
import { LocalSocketFactory } from './proxy/socket-factory.js';
import { WorkloadProxyManager } from './proxy/workload-proxies.js';
import type { InpodProxies } from './inpod/inpod-proxies.js';
import type { ZdsClient } from './inpod/zds-client.js';
import type { ProxyContext } from './proxy/proxy-context.js';
import type { NamedSubscription } from './xds/ads-client.js';

interface ConfigSource {
  stop(): void;
  pending(): string[];
}

type Lifecycle = { t: 'starting' } | { t: 'running' } | { t: 'draining' } | { t: 'stopped' };

/** The listeners a process built on ztunnel's parts runs for its local workloads (`WorkloadProxyManager`'s shape). */
export interface LocalProxies {
  /** The state changed: start or stop listeners to match it. */
  reconcile(): void;
  pending(): string[];
  dump(): Record<string, object>;
  close(immediate: boolean): void;
}

/**
 * What another proxy that is built on ztunnel's parts replaces (the waypoint proxy): its own listeners instead of
 * the node's workloads', certificates for its own identity rather than by impersonation, and its xDS node type.
 */
export interface ProxyParts {
  /** Its listeners, given the shared parts and the metrics registry to add its own metrics to. */
  readonly proxies: (ctx: ProxyContext, registry: MetricsRegistry) => LocalProxies;
  /** The first field of the xDS node ID (`ztunnel`, `waypoint`). */
  readonly nodeType: string;
  /** Types it subscribes to by name, besides ztunnel's. */
  readonly subscriptions?: readonly NamedSubscription[];
}

/**
 * A running ztunnel: state, identities, per-workload listeners and the admin/metrics/readiness servers. Emits
 * `fatal` when it cannot go on (in-pod: the node agent broke the ZDS protocol); ztunnel then exits, as Istio's does.
 */
export class Ztunnel extends EventEmitter<{ fatal: [MeshError] }> {
  private lifecycle: Lifecycle = { t: 'starting' };
  private servers: http.Server[] = [];
  private shutdownPromise: Promise<void> | undefined;
  readonly ports = { admin: 0, metrics: 0, readiness: 0 };

  private constructor(
    readonly config: ZtunnelConfig,
    private readonly logs: LogControl,
    readonly ctx: ProxyContext,
    /** Local mode: the listeners of this node's workloads on their IPs (or another proxy's own listeners). */
    private readonly proxies: LocalProxies | undefined,
    /** In-pod mode: the listeners inside each pod's network namespace, as ZDS hands the pods over. */
    readonly inpod: InpodProxies | undefined,
    /** In-pod mode: the node agent's ZDS, which starts and stops `inpod`'s pods. */
    private readonly zds: ZdsClient | undefined,
    private readonly metrics: ZtunnelMetrics,
    private readonly source: ConfigSource,
  ) {
    super();
  }

  static async start(config: ZtunnelConfig, logs: LogControl, parts?: ProxyParts): Promise<Ztunnel> {
    const log = logs.scope('ztunnel');
    const caClient = await startCaClient(config, log, parts === undefined);
    const metrics = new ZtunnelMetrics(VERSION, await processMetrics(config.nodeMetrics));
    const state = new ProxyState();
    const secrets = new SecretManager(caClient, config.secretTtlMs, logs.scope('identity'));
    registerCertificateMetrics(metrics.registry, secrets);
    const sockets = new LocalSocketFactory();
    const ctx: ProxyContext = {
      config,
      state,
      secrets,
      sockets,
      connections: new ConnectionManager(metrics, logs.scope('access'), logs.scope('proxy')),
      pool: new HbonePool(poolSettings(config), sockets, logs.scope('pool')),
      log: logs.scope('proxy'),
    };
    // In-pod mode, the node agent's ZDS says which pods this ztunnel serves; local mode follows the node's workloads.
    const inpod = config.inpod === undefined ? undefined : await startInpodProxies(ctx, config.inpod, metrics, logs);
    const proxies =
      parts?.proxies(ctx, metrics.registry) ?? (inpod === undefined ? new WorkloadProxyManager(ctx) : undefined);
    // Live connections are re-checked only when a decision may differ.
    state.on('change', (c) => {
      if (proxies !== undefined && (parts !== undefined || changesWorkloadsOn(c, config.nodeName))) proxies.reconcile();
      if (mayAlterPolicyDecision(c, config.nodeName)) {
        log.debug(
          { policies: c.policies.length, workloads: c.workloads.length, connections: ctx.connections.size },
          're-evaluating live connections against policy',
        );
        ctx.connections.reevaluate(state);
      }
    });
    const source = await startConfigSource(config, state, secrets, metrics, logs, parts);
    const zds =
      inpod === undefined
        ? undefined
        : new (await import('./inpod/zds-client.js')).ZdsClient(config.inpod!.uds, inpod, logs.scope('inpod'), {
            metrics: metrics.registry,
          });
    const zt = new Ztunnel(config, logs, ctx, proxies, inpod, zds, metrics, source);
    await zt.startServers();
    zt.lifecycle = { t: 'running' };
    if (zds !== undefined) {
      zds.on('stopped', (e) => zt.emit('fatal', e));
      zds.start();
    }
    log.info(
      {
        version: VERSION,
        node: config.nodeName,
        admin: zt.ports.admin,
        metrics: zt.ports.metrics,
        readiness: zt.ports.readiness,
      },
      'ztunnel started',
    );
    return zt;
  }

  /**
   * Readiness: config loaded and every local workload's listeners up; in-pod, the node agent's snapshot in and no
   * pod waiting for a retry (ztunnel `src/readiness/server.rs`, `src/inpod/statemanager.rs`).
   */
  pending(): string[] {
    if (this.lifecycle.t !== 'running') return [`ztunnel is ${this.lifecycle.t}`];
    return [...this.source.pending(), ...(this.proxies?.pending() ?? []), ...this.inpodPending()];
  }

  private inpodPending(): string[] {
    if (this.zds === undefined || this.zds.ready) return [];
    const pods = this.zds.pending();
    return pods.length > 0
      ? pods.map((uid) => `pod ${uid}: proxy failed to start, retrying`)
      : [`no snapshot from the node agent on ${this.config.inpod!.uds} yet`];
  }

  dump(): object {
    return configDump(this.config, this.ctx.state, this.ctx.secrets, {
      ...this.proxies?.dump(),
      ...this.inpod?.dump(),
    });
  }

  /**
   * Graceful shutdown (SIGTERM, /quitquitquit): stop accepting, let connections finish until
   * CONNECTION_TERMINATION_DEADLINE, then close what is left.
   */
  shutdown(): Promise<void> {
    this.shutdownPromise ??= this.doShutdown();
    return this.shutdownPromise;
  }

  private async doShutdown(): Promise<void> {
    const log = this.logs.scope('ztunnel');
    this.lifecycle = { t: 'draining' };
    log.info(
      { open: this.ctx.connections.size, deadlineMs: this.config.connectionTerminationDeadlineMs },
      'shutting down: draining connections',
    );
    this.source.stop();
    this.proxies?.close(false);
    this.inpod?.close(false);
    this.ctx.pool.close();
    await this.ctx.connections.drain(this.config.connectionTerminationDeadlineMs);
    this.proxies?.close(true);
    this.zds?.close();
    this.inpod?.close(true);
    this.ctx.pool.destroy();
    this.ctx.secrets.stop();
    for (const s of this.servers) s.close();
    this.lifecycle = { t: 'stopped' };
    log.info('ztunnel stopped');
  }

  private async startServers(): Promise<void> {
    const c = this.config;
    const admin = await startHttpServer(
      c.adminAddress,
      {
        '/': () => ({
          status: 200,
          body: ['/config_dump', '/logging', '/quitquitquit', '/healthz/ready'].join('\n') + '\n',
        }),
        '/config_dump': () => ({ status: 200, body: JSON.stringify(this.dump(), null, 2), type: 'application/json' }),
        '/logging': (req, url) => {
          if (req.method !== 'POST')
            return { status: 405, body: 'use POST /logging[?level=<level>|<scope>=<level>,...][&reset]\n' };
          try {
            if (url.searchParams.has('reset')) this.logs.reset(c.logLevel);
            const level = url.searchParams.get('level');
            if (level !== null) this.logs.apply(level);
            return { status: 200, body: this.logs.describe() };
          } catch (e) {
            return { status: 400, body: `${describeError(e)}\n` };
          }
        },
        '/quitquitquit': (req) => {
          if (req.method !== 'POST') return { status: 405, body: 'use POST /quitquitquit\n' };
          setImmediate(() => void this.shutdown().then(() => process.exit(0)));
          return { status: 200, body: 'shutting down\n' };
        },
      },
      'admin',
    );
    const metricsHandler = async (): Promise<{ status: number; body: string; type: string }> => {
      this.ctx.connections.flushBytes();
      return { status: 200, body: await this.metrics.registry.metrics(), type: this.metrics.registry.contentType };
    };
    const metrics = await startHttpServer(
      c.metricsAddress,
      { '/metrics': metricsHandler, '/stats/prometheus': metricsHandler },
      'metrics',
    );
    const readiness = await startHttpServer(
      c.readinessAddress,
      {
        '/healthz/ready': () => {
          const p = this.pending();
          return p.length === 0
            ? { status: 200, body: 'ready\n' }
            : { status: 500, body: `not ready, pending: ${JSON.stringify(p)}\n` };
        },
      },
      'readiness',
    );
    this.servers = [admin, metrics, readiness];
    // startHttpServer's servers do not hold a process open; a ztunnel's do, until shutdown closes them: it runs until
    // told to stop, as upstream's does, also when no workload on its node has listeners of its own.
    for (const s of this.servers) s.ref();
    this.ports.admin = boundPort(admin);
    this.ports.metrics = boundPort(metrics);
    this.ports.readiness = boundPort(readiness);
  }
}

/*
 * Each mode's parts are imported when that mode starts, so a ztunnel loads nothing it does not use and an idle
 * node proxy stays small (docs/performance.md, "Idle ztunnel: what it loads"). istiod's CA and xDS clients bring
 * gRPC and the generated protobuf code; the local config brings the YAML parser; in-pod mode brings ZDS, the
 * native addon and the DNS proxy.
 */

/** `impersonate`: a node proxy asks for its workloads' certificates; another proxy asks for its own. */
async function startCaClient(config: ZtunnelConfig, log: Logger, impersonate: boolean): Promise<CaClient> {
  if (config.ca.t === 'istiod') {
    const [{ IstioCaClient }, { readRootCa }] = await Promise.all([
      import('./identity/istio-ca-client.js'),
      import('./grpc-channel.js'),
    ]);
    // Shared (node proxy) mode: every workload's certificate is requested by impersonation (ztunnel src/identity/caclient.rs).
    return new IstioCaClient({
      address: config.ca.address,
      rootPem: await readRootCa(config.caRootCa, 'CA_ROOT_CA'),
      tokenFile: config.authToken,
      clusterId: config.clusterId,
      impersonate,
      altHostname: config.altCaHostname,
      headers: config.caHeaders,
    });
  }
  const [{ LocalCaClient }, { CertificateAuthority }] = await Promise.all([
    import('./identity/local-ca-client.js'),
    import('../lib/pki/certificate-authority.js'),
  ]);
  if (config.ca.t === 'local') return new LocalCaClient(await CertificateAuthority.fromPluginDir(config.ca.dir));
  const selfSigned = await CertificateAuthority.selfSigned(config.trustDomain);
  log.warn(
    'FAKE_CA=true: generated a self-signed root; only this ztunnel trusts it, so HBONE to other ztunnels will fail verification',
  );
  return new LocalCaClient(selfSigned);
}

async function startInpodProxies(
  ctx: ProxyContext,
  inpod: InpodConfig,
  metrics: ZtunnelMetrics,
  logs: LogControl,
): Promise<InpodProxies> {
  const { InpodProxies } = await import('./inpod/inpod-proxies.js');
  const c = ctx.config;
  if (!c.dnsProxy) return new InpodProxies(ctx, inpod, undefined);
  const [{ podDnsStarter }, { DnsMetrics }, { readResolvConf }] = await Promise.all([
    import('./inpod/pod-dns.js'),
    import('./dns/dns-metrics.js'),
    import('./dns/resolv-conf.js'),
  ]);
  const dns = podDnsStarter({
    state: ctx.state,
    upstream: await readResolvConf(),
    metrics: new DnsMetrics(metrics.registry),
    clusterDomain: c.clusterDomain,
    ipv6Enabled: c.ipv6Enabled,
    log: logs.scope('dns'),
  });
  return new InpodProxies(ctx, inpod, dns);
}

/** Where workloads, services and policies come from: istiod's delta xDS, or the LOCAL_XDS_PATH file. */
async function startConfigSource(
  config: ZtunnelConfig,
  state: ProxyState,
  secrets: SecretManager,
  metrics: ZtunnelMetrics,
  logs: LogControl,
  parts: ProxyParts | undefined,
): Promise<ConfigSource> {
  const nodeType = parts?.nodeType ?? 'ztunnel';
  if (config.xdsAddress === undefined) {
    const { LocalConfigWatcher } = await import('./state/local-config-watcher.js');
    const watcher = new LocalConfigWatcher(config.localXdsPath!, (c) => state.apply(c), logs.scope('xds'));
    await watcher.start();
    return { stop: () => watcher.stop(), pending: () => [] };
  }
  const { AdsClient } = await import('./xds/ads-client.js');
  const ns = config.podNamespace;
  const ads = new AdsClient(
    {
      address: config.xdsAddress,
      rootCa: config.xdsRootCa,
      tokenFile: config.authToken,
      clusterId: config.clusterId,
      altHostname: config.altXdsHostname,
      headers: config.xdsHeaders,
      subscriptions: parts?.subscriptions,
      // The node ID istiod recognises as a ztunnel; ISTIO_META_* / ISTIO_METAJSON_* added (ztunnel src/xds/client.rs).
      node: {
        id: `${nodeType}~${config.instanceIp || '1.1.1.1'}~${config.podName}.${ns}~${ns}.svc.cluster.local`,
        metadata: {
          NAME: config.podName,
          NAMESPACE: ns,
          INSTANCE_IPS: config.instanceIp,
          NODE_NAME: config.nodeName,
          CLUSTER_ID: config.clusterId,
          ...config.nodeMetadata,
        },
      },
    },
    (delta) => state.update(delta),
    metrics.registry,
    logs.scope('xds'),
  );
  // istiod answers again: certificates whose fetch failed during the outage are retried now, not after their backoff.
  ads.on('connected', () => secrets.retryFailed());
  await ads.start();
  return ads;
}
