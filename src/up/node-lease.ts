/**
 * The kubelet's heartbeat (k8s.io/kubernetes `pkg/kubelet/nodelease`): a Lease `kube-node-lease/<node>` held by the
 * node for 40 s and renewed every 10 s, a quarter of that (`renewIntervalFraction`), owned by its Node so it goes
 * with it. After each renewal `onRenew` runs: the kubelet re-posts its Ready condition there when the API no longer
 * has it True (the node lifecycle controller marks a node whose heartbeats stopped Unknown), as its status loop
 * would. A renewal that fails is logged and tried again at the next tick.
 */
import {
  CoordinationV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { describeError } from '../lib/errors.js';
import { kubeMicroTime } from '../lib/kube-time.js';
import type { Logger } from '../lib/log.js';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
/** kubelet's `nodeLeaseDurationSeconds`. */
export const NODE_LEASE_DURATION_SECONDS = 40;
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export interface NodeLeaseOptions {
  readonly renewIntervalMs?: number;
  readonly now?: () => number;
  readonly onRenew?: () => Promise<void>;
}

export class NodeLease {
  private readonly leases: CoordinationV1Api;
  private readonly core: CoreV1Api;
  private readonly renewIntervalMs: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(
    kc: KubeConfig,
    private readonly node: string,
    private readonly log: Logger,
    private readonly opts: NodeLeaseOptions = {},
  ) {
    this.leases = kc.makeApiClient(CoordinationV1Api);
    this.core = kc.makeApiClient(CoreV1Api);
    this.renewIntervalMs = opts.renewIntervalMs ?? (NODE_LEASE_DURATION_SECONDS * 1000) / 4;
    this.now = opts.now ?? Date.now;
  }

  /** Renews now, then every interval. */
  start(): void {
    const tick = (): void => {
      this.running = this.renew().catch((e: unknown) =>
        this.log.warn({ node: this.node, error: describeError(e) }, 'cannot renew the node lease; trying again'),
      );
    };
    tick();
    this.timer = setInterval(tick, this.renewIntervalMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private async renew(): Promise<void> {
    const spec = {
      holderIdentity: this.node,
      leaseDurationSeconds: NODE_LEASE_DURATION_SECONDS,
      renewTime: kubeMicroTime(this.now()),
    };
    const name = this.node;
    try {
      await this.leases.patchNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE, body: { spec } }, MERGE_PATCH);
    } catch (e) {
      if ((e as { code?: number }).code !== 404) throw e;
      const node = await this.core.readNode({ name });
      await this.leases.createNamespacedLease({
        namespace: NODE_LEASE_NAMESPACE,
        body: {
          metadata: {
            name,
            namespace: NODE_LEASE_NAMESPACE,
            ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name, uid: node.metadata?.uid ?? '' }],
          },
          spec: { holderIdentity: spec.holderIdentity, leaseDurationSeconds: spec.leaseDurationSeconds },
        },
      });
      await this.leases.patchNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE, body: { spec } }, MERGE_PATCH);
    }
    await this.opts.onRenew?.();
  }
}
