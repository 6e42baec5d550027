/**
 * The node agent process (istio cni/pkg/nodeagent/server.go, cni/pkg/cmd/root.go): writes the plugin's
 * kubeconfig (kept current as the agent's token is renewed), installs the plugin on the node and keeps it installed
 * (src/cni/install/, unless CNI_ENABLE_INSTALL=false), serves `/healthz` and `/readyz` (Istio's port 8000) and
 * `/metrics`, starts the informers and waits for them, puts the host probe rules in place, builds the snapshot of
 * the pods already enrolled (their netns from /proc, their rules reconciled), starts the enrollment queue, the ZDS
 * server ztunnel connects to and the plugin's socket, and only then reports ready (and, as Istio's readiness, once
 * the plugin is installed too). At shutdown, unless the agent's DaemonSet (`istio-cni-node` in POD_NAMESPACE) is
 * still there, which means an upgrade or a node reboot, the plugin is uninstalled first, then the plugin socket
 * closes and the host probe rules are removed; pods' own rules always stay, so captured pods keep their traffic on
 * ztunnel.
 */
import { mkdir } from 'node:fs/promises';
import type http from 'node:http';
import { AppsV1Api, type KubeConfig } from '@kubernetes/client-node';
import { Registry as MetricsRegistry, collectDefaultMetrics } from 'prom-client';
import { MeshError, describeError } from '../../lib/errors.js';
import { startHttpServer } from '../../lib/http-server.js';
import type { LogControl, Logger } from '../../lib/log.js';
import { CniInstaller } from '../install/cni-installer.js';
import type { CniAgentConfig } from './cni-agent-config.js';
import { Enrollment } from './enrollment.js';
import { MeshDataplane, type HostProbes, type InpodRules, type PodNetnsCache } from './mesh-dataplane.js';
import { PluginServer } from './plugin-server.js';
import { PluginKubeconfig } from './plugin-kubeconfig.js';
import { PodMarker } from './pod-marker.js';
import type { SnapshotPod, ZtunnelLink } from './ztunnel-link.js';

/** Istio's DaemonSet name for the node agent (`<chart name>-node`), looked up at shutdown. */
export const AGENT_DAEMONSET_NAME = 'istio-cni-node';

/** The ZDS server as the agent runs it (`ztunnel-server.ts`). */
export interface ZdsServer extends ZtunnelLink {
  listen(): void;
  close(): void;
}

/** The node-level pieces the agent drives, built by the caller (the CLI builds the real ones). */
export interface CniAgentParts {
  readonly rules: InpodRules;
  readonly hostProbes: HostProbes;
  readonly netns: PodNetnsCache;
  zdsServer(socketPath: string, snapshot: () => SnapshotPod[], log: Logger, metrics: MetricsRegistry): ZdsServer;
}

export class CniAgent {
  private isReady = false;
  private readonly servers: http.Server[] = [];
  private plugin: PluginServer | undefined;
  private pluginKubeconfig: PluginKubeconfig | undefined;
  private installer: CniInstaller | undefined;
  private zds: ZdsServer | undefined;
  private readonly enrollment: Enrollment;
  private readonly dataplane: MeshDataplane;
  private readonly log: Logger;
  readonly metrics = new MetricsRegistry();

  private constructor(
    private readonly cfg: CniAgentConfig,
    private readonly kc: KubeConfig,
    private readonly parts: CniAgentParts,
    private readonly logs: LogControl,
  ) {
    this.log = logs.scope('cni-agent');
    this.dataplane = new MeshDataplane(
      parts.rules,
      parts.hostProbes,
      parts.netns,
      new PodMarker(kc, cfg.nodeName),
      logs.scope('dataplane'),
    );
    this.enrollment = new Enrollment(kc, cfg, this.dataplane, logs.scope('enrollment'));
  }

  /** Istio's readiness: the node agent serving and, when it installs the plugin, the plugin installed. */
  get ready(): boolean {
    return this.isReady && (this.installer?.ready ?? true);
  }

  /** Starts the agent; resolves once it is ready. A failure stops what was started and rejects. */
  static async start(cfg: CniAgentConfig, kc: KubeConfig, parts: CniAgentParts, logs: LogControl): Promise<CniAgent> {
    const agent = new CniAgent(cfg, kc, parts, logs);
    try {
      await agent.run();
    } catch (e) {
      await agent.stop(false);
      throw e;
    }
    return agent;
  }

  private async run(): Promise<void> {
    const { cfg } = this;
    try {
      await mkdir(cfg.runDir, { recursive: true, mode: 0o755 });
    } catch (e) {
      throw new MeshError('AGENT_ERR_RUN_DIR', `cannot create the run directory ${cfg.runDir}: ${describeError(e)}`, {
        cause: e,
      });
    }
    this.pluginKubeconfig = await PluginKubeconfig.start(
      this.kc,
      cfg.pluginKubeconfig,
      this.logs.scope('plugin-kubeconfig'),
    );
    // As Istio's agent, the plugin is installed while the rest starts: pods it sends before the agent is ready are
    // refused (their sandboxes are retried) rather than started outside the mesh.
    if (cfg.install !== undefined) {
      this.installer = new CniInstaller(cfg.install, cfg.pluginKubeconfig, this.logs.scope('install'));
      this.installer.start();
    }
    collectDefaultMetrics({ register: this.metrics });
    this.servers.push(
      await startHttpServer(
        cfg.readinessAddress,
        {
          '/healthz': () => ({ status: 200, body: '' }),
          '/readyz': () => (this.ready ? { status: 200, body: '' } : { status: 503, body: 'Service Unavailable\n' }),
        },
        'readiness',
      ),
      await startHttpServer(
        cfg.monitoringAddress,
        {
          '/metrics': async () => ({ status: 200, body: await this.metrics.metrics(), type: this.metrics.contentType }),
        },
        'monitoring',
      ),
    );
    // A daemon: its readiness server keeps the process up while it waits for the API (the informers' retry timers do not).
    this.servers[0]?.ref();
    this.enrollment.start();
    await this.enrollment.synced;
    this.log.info({ node: cfg.nodeName }, 'pod and namespace caches synced');
    await this.parts.hostProbes.create();
    const enrolled = this.enrollment.activeAmbientPods();
    await this.dataplane
      .constructInitialSnapshot(enrolled, cfg.reconcilePodRulesOnStartup)
      .catch((e: unknown) => this.log.warn({ error: describeError(e) }, 'failed to construct the initial snapshot'));
    this.log.info({ pods: enrolled.length }, 'initial snapshot built');
    this.enrollment.run();
    this.zds = this.parts.zdsServer(
      cfg.ztunnelSocket,
      () => this.dataplane.snapshot(),
      this.logs.scope('zds'),
      this.metrics,
    );
    this.dataplane.attach(this.zds);
    this.zds.listen();
    this.plugin = new PluginServer(
      cfg.pluginSocket,
      (name, namespace) => this.enrollment.podIfAmbientEnabled(name, namespace),
      this.dataplane,
      this.metrics,
      this.logs.scope('plugin'),
    );
    await this.plugin.start();
    this.isReady = true;
    this.log.info(
      { pluginSocket: cfg.pluginSocket, ztunnelSocket: cfg.ztunnelSocket },
      'CNI ambient server marking ready',
    );
  }

  /** Stops the agent; `decideCleanup` false skips the DaemonSet lookup and leaves the host rules (a failed start). */
  async stop(decideCleanup = true): Promise<void> {
    this.isReady = false;
    await this.installer?.stop();
    this.pluginKubeconfig?.close();
    const cleanup = decideCleanup && (await this.shouldCleanUp());
    this.log.info({ cleanup }, 'node agent shutting down');
    // Istio removes the plugin before stopping the agent, so no new pod is handed to an agent that is going.
    if (cleanup) await this.installer?.cleanup();
    await this.plugin?.stop();
    await this.enrollment.stop();
    await this.dataplane
      .stop(cleanup)
      .catch((e: unknown) => this.log.error({ error: describeError(e) }, 'cannot remove the host probe rules'));
    this.zds?.close();
    await Promise.all(this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }

  /** Istio's ShouldStopCleanup, inverted: clean up unless the agent's DaemonSet is still there (an upgrade). */
  private async shouldCleanUp(): Promise<boolean> {
    if (this.cfg.disableSafeUpgrade) return true;
    if (this.cfg.podNamespace === '') return true;
    try {
      const ds = await this.kc
        .makeApiClient(AppsV1Api)
        .readNamespacedDaemonSet({ name: AGENT_DAEMONSET_NAME, namespace: this.cfg.podNamespace });
      const upgrading = ds.metadata?.deletionTimestamp === undefined;
      if (upgrading)
        this.log.info(
          { daemonSet: `${this.cfg.podNamespace}/${AGENT_DAEMONSET_NAME}` },
          'parent DaemonSet still present (upgrade or node reboot); leaving the host rules in place',
        );
      return !upgrading;
    } catch {
      return true;
    }
  }
}
