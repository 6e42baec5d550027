/**
 * Which pods on this node belong in the mesh, kept true as pods and namespaces change (istio
 * cni/pkg/nodeagent/informers.go): informers on the node's pods (`spec.nodeName=<NODE_NAME>`) and on every
 * namespace, and one queue. A pod update compares intent (the enablement selectors and the excluded namespaces)
 * with status (the `ambient.istio.io/redirection` annotation) and adds or removes it; a terminated or deleted pod
 * that was enrolled is removed; a namespace whose labels change re-examines its pods. New pods arrive through the
 * CNI plugin, so pod adds are not acted on. Failures are retried for as long as the agent runs (a ztunnel may
 * connect at any time), 5 ms doubling to 5 s, except the failures Istio does not retry.
 */
import type { KubeConfig, V1Namespace, V1Pod } from '@kubernetes/client-node';
import { RestartingInformer } from '../../kube/informer.js';
import { listJson } from '../../kube/list-json.js';
import { ReconcileQueue } from '../../kube/reconcile-queue.js';
import { MeshError, describeError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { decideForPod } from '../plugin/capture-decision.js';
import type { EnablementSelectors } from '../plugin/enablement-selectors.js';
import { isNonRetryableAdd, type PodDataplane } from './mesh-dataplane.js';
import { isPodTerminal, isZtunnelPod, podFullyEnrolled, podIps, podPartiallyEnrolled } from './pod-enrollment.js';

/** Istio's queue retries "effectively uncapped" (math.MaxInt attempts), at most every 5 s. */
const MAX_ATTEMPTS = Number.MAX_SAFE_INTEGER;
const MAX_RETRY_DELAY_MS = 5_000;

export interface EnrollmentConfig {
  readonly nodeName: string;
  readonly systemNamespace: string;
  readonly enablementSelectors: EnablementSelectors;
  readonly excludeNamespaces: readonly string[];
}

const POD_PREFIX = 'pod:';
const NAMESPACE_PREFIX = 'ns:';
const podKey = (p: V1Pod): string => `${POD_PREFIX}${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`;
const sameIps = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((ip) => b.includes(ip));

export class Enrollment {
  private readonly pods: RestartingInformer<V1Pod>;
  private readonly namespaces: RestartingInformer<V1Namespace>;
  private readonly queue: ReconcileQueue;
  /** Namespace labels as last seen, to notice a change. */
  private readonly namespaceLabels = new Map<string, string>();
  /** Deleted pods not yet removed from the mesh, by key (the cache no longer has them). */
  private readonly deleted = new Map<string, V1Pod>();
  /** Each pod's last version with IPs: a terminating pod's final status may have none (kubernetes#125370). */
  private readonly lastWithIps = new Map<string, V1Pod>();
  /** Each enrolled pod's IPs as last put in the host probe ipset. */
  private readonly syncedIps = new Map<string, readonly string[]>();
  readonly synced: Promise<void>;

  constructor(
    kc: KubeConfig,
    private readonly cfg: EnrollmentConfig,
    private readonly dataplane: PodDataplane,
    private readonly log: Logger,
  ) {
    this.queue = new ReconcileQueue((key) => this.reconcile(key), MAX_ATTEMPTS, log, MAX_RETRY_DELAY_MS);
    const fieldSelector = `spec.nodeName=${cfg.nodeName}`;
    const seen = (p: V1Pod): void => {
      if (podIps(p).length > 0) this.lastWithIps.set(podKey(p), p);
    };
    this.pods = new RestartingInformer<V1Pod>(
      kc,
      '/api/v1/pods',
      () => listJson(kc, `/api/v1/pods?fieldSelector=${encodeURIComponent(fieldSelector)}`),
      {
        add: seen,
        update: (p) => {
          seen(p);
          this.queue.add(podKey(p));
        },
        delete: (p) => {
          seen(p);
          this.deleted.set(podKey(p), p);
          this.queue.add(podKey(p));
        },
      },
      log,
      fieldSelector,
    );
    const onNamespace = (ns: V1Namespace): void => {
      const name = ns.metadata?.name ?? '';
      const labels = JSON.stringify(ns.metadata?.labels ?? {});
      if (this.namespaceLabels.get(name) === labels) return;
      this.namespaceLabels.set(name, labels);
      this.queue.add(`${NAMESPACE_PREFIX}${name}`);
    };
    this.namespaces = new RestartingInformer<V1Namespace>(
      kc,
      '/api/v1/namespaces',
      () => listJson(kc, '/api/v1/namespaces'),
      {
        add: onNamespace,
        update: onNamespace,
        delete: (ns) => this.namespaceLabels.delete(ns.metadata?.name ?? ''),
      },
      log,
    );
    this.synced = Promise.all([this.pods.synced, this.namespaces.synced]).then(() => undefined);
  }

  /** Starts the informers; events queue up until `run`, once the initial snapshot is built. */
  start(): void {
    this.pods.start();
    this.namespaces.start();
  }

  run(): void {
    this.queue.run();
  }

  async stop(): Promise<void> {
    this.queue.stop();
    await Promise.all([this.pods.stop(), this.namespaces.stop()]);
  }

  /**
   * The pod for a CNI ADD (Istio GetPodIfAmbientEnabled): throws when the pod or its namespace is not in the cache,
   * undefined when the selectors do not select it.
   */
  podIfAmbientEnabled(name: string, namespace: string): V1Pod | undefined {
    const ns = this.namespaces.get(namespace);
    if (ns === undefined)
      throw new MeshError('AGENT_ERR_POD_NOT_FOUND', `namespace ${namespace} is not in the node agent's cache`);
    const pod = this.pods.get(name, namespace);
    if (pod === undefined)
      throw new MeshError(
        'AGENT_ERR_POD_NOT_FOUND',
        `pod ${namespace}/${name} is not in the node agent's cache of node ${this.cfg.nodeName}'s pods`,
      );
    return this.matches(pod, ns) ? pod : undefined;
  }

  /** The pods enrolled before the agent started (annotated `enabled`), still running, not ztunnel. */
  activeAmbientPods(): V1Pod[] {
    return this.pods
      .list()
      .filter((p) => !isZtunnelPod(this.cfg.systemNamespace, p) && !isPodTerminal(p) && podFullyEnrolled(p));
  }

  private matches(pod: V1Pod, ns: V1Namespace | undefined): boolean {
    const d = decideForPod(this.cfg, {
      labels: pod.metadata?.labels ?? {},
      annotations: pod.metadata?.annotations ?? {},
      hostNetwork: pod.spec?.hostNetwork === true,
      namespaceLabels: ns?.metadata?.labels ?? {},
    });
    return d.capture;
  }

  private async reconcile(key: string): Promise<void> {
    if (key.startsWith(NAMESPACE_PREFIX)) {
      const namespace = key.slice(NAMESPACE_PREFIX.length);
      for (const p of this.pods.list(namespace))
        if (!isZtunnelPod(this.cfg.systemNamespace, p)) this.queue.add(podKey(p));
      return;
    }
    const slash = key.indexOf('/');
    const namespace = key.slice(POD_PREFIX.length, slash);
    const name = key.slice(slash + 1);
    const ns = this.namespaces.get(namespace);
    const current = this.pods.get(name, namespace);
    const gone = this.deleted.get(key);
    if (gone !== undefined) {
      if (gone.metadata?.uid !== current?.metadata?.uid) {
        await this.reconcileDeleted(gone, ns);
        this.syncedIps.delete(key);
      }
      this.deleted.delete(key);
    }
    if (current === undefined) {
      this.lastWithIps.delete(key);
      return;
    }
    if (ns === undefined) {
      this.log.error({ pod: `${namespace}/${name}` }, 'namespace of the pod not in the cache; skipping the event');
      return;
    }
    await this.reconcilePod(key, current, ns);
  }

  private async reconcileDeleted(pod: V1Pod, ns: V1Namespace | undefined): Promise<void> {
    if (!podFullyEnrolled(pod) && !podPartiallyEnrolled(pod) && !this.matches(pod, ns)) return;
    await this.dataplane.removePodFromMesh(this.withIps(pod), true);
  }

  private async reconcilePod(key: string, pod: V1Pod, ns: V1Namespace): Promise<void> {
    const log = this.log.child({ pod: key.slice(POD_PREFIX.length) });
    const enrolled = podFullyEnrolled(pod);
    const partial = podPartiallyEnrolled(pod);
    const matches = this.matches(pod, ns);
    const excluded = this.cfg.excludeNamespaces.includes(pod.metadata?.namespace ?? '');
    const shouldBeEnabled = matches && !excluded;
    const terminated = isPodTerminal(pod);
    if (matches && excluded)
      log.debug('pod is selected for the mesh but its namespace is excluded (EXCLUDE_NAMESPACES)');
    if ((enrolled || partial) && terminated) {
      await this.dataplane.removePodFromMesh(this.withIps(pod), true);
      this.syncedIps.delete(key);
      return;
    }
    const ips = podIps(pod);
    if (enrolled && shouldBeEnabled && !terminated && ips.length > 0 && !sameIps(ips, this.syncedIps.get(key) ?? [])) {
      await this.dataplane.syncHostProbeIps(pod, ips);
      this.syncedIps.set(key, ips);
    }
    if ((enrolled === shouldBeEnabled && !partial) || terminated) return;
    if (!shouldBeEnabled) {
      await this.dataplane.removePodFromMesh(pod, false);
      this.syncedIps.delete(key);
      return;
    }
    if (ips.length === 0) {
      log.debug('pod has no IP yet; not adding it');
      return;
    }
    try {
      await this.dataplane.addPodToMesh(pod, ips, '');
      this.syncedIps.set(key, ips);
    } catch (e) {
      if (!isNonRetryableAdd(e)) throw e;
      log.error({ error: describeError(e) }, 'cannot capture the pod; not retrying');
    }
  }

  /** The pod's last version with IPs (as Istio removes a terminated pod by its old version), so removal finds its ipset entries. */
  private withIps(pod: V1Pod): V1Pod {
    if (podIps(pod).length > 0) return pod;
    const last = this.lastWithIps.get(podKey(pod));
    return last !== undefined && last.metadata?.uid === pod.metadata?.uid ? last : pod;
  }
}
