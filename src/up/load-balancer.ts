/**
 * LoadBalancer Services on `amesh up`, as MetalLB in layer-2 mode gives them to a kind cluster: each Service of
 * type LoadBalancer gets the next free address of the pool (`--lb-pool`; its `spec.loadBalancerIP` when that is in
 * the pool and free) in `status.loadBalancer.ingress`, and the address is announced on the first node's link to the
 * node network (MetalLB's speaker answers ARP for it from one node), where kube-proxy's rules take it to the
 * Service's endpoints. The host, on that network, reaches the address as it reaches a kind cluster's. An address
 * is released when its Service is deleted or is no longer of type LoadBalancer; a Service the pool has no room for
 * keeps no address, and the log says so.
 */
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Service } from '@kubernetes/client-node';
import { RestartingInformer } from '../kube/informer.js';
import { listJson } from '../kube/list-json.js';
import { describeError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';
import { parseCidr } from '../lib/ip.js';
import { ip } from './run-command.js';

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const toNumber = (a: string): number => parseCidr(`${a}/32`)!.bytes.readUInt32BE(0);
const toAddress = (v: number): string => [v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff].join('.');
const keyOf = (s: V1Service): string => `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`;

export class LoadBalancerAllocator {
  private readonly services: RestartingInformer<V1Service>;
  private readonly core: CoreV1Api;
  /** Address → the Service (`namespace/name`) it is given to. */
  private readonly given = new Map<string, string>();
  private readonly first: number;
  private readonly last: number;
  private queue: Promise<void> = Promise.resolve();
  readonly synced: Promise<void>;

  constructor(
    kc: KubeConfig,
    pool: { readonly first: string; readonly last: string },
    /** The network namespace and link the addresses are announced on. */
    private readonly announce: { readonly netns: string; readonly link: string },
    private readonly log: Logger,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.first = toNumber(pool.first);
    this.last = toNumber(pool.last);
    const changed = (s: V1Service): void => this.enqueue(() => this.reconcile(s));
    this.services = new RestartingInformer<V1Service>(
      kc,
      '/api/v1/services',
      () => listJson(kc, '/api/v1/services'),
      { add: changed, update: changed, delete: (s) => this.enqueue(() => this.release(keyOf(s))) },
      log,
    );
    this.synced = this.services.synced.then(() => this.queue);
  }

  start(): void {
    this.services.start();
  }

  async stop(): Promise<void> {
    await this.services.stop();
    await this.queue;
  }

  /** One change at a time, so two Services never take the same address. */
  private enqueue(work: () => Promise<void>): void {
    this.queue = this.queue
      .then(work)
      .catch((e: unknown) => this.log.error({ error: describeError(e) }, 'cannot update a LoadBalancer address'));
  }

  private async reconcile(s: V1Service): Promise<void> {
    const key = keyOf(s);
    if (s.spec?.type !== 'LoadBalancer') return this.release(key);
    const held = [...this.given].find(([, k]) => k === key)?.[0];
    const address = held ?? this.pick(s);
    if (address === undefined) {
      this.log.warn({ service: key }, 'the LoadBalancer pool has no free address (--lb-pool); the Service gets none');
      return;
    }
    if (held === undefined) {
      this.given.set(address, key);
      await ip('-n', this.announce.netns, 'addr', 'add', `${address}/32`, 'dev', this.announce.link);
      this.log.info({ service: key, address }, 'LoadBalancer address given');
    }
    if (s.status?.loadBalancer?.ingress?.[0]?.ip === address) return;
    await this.core.patchNamespacedServiceStatus(
      {
        name: s.metadata?.name ?? '',
        namespace: s.metadata?.namespace ?? '',
        body: { status: { loadBalancer: { ingress: [{ ip: address, ipMode: 'VIP' }] } } },
      },
      MERGE_PATCH,
    );
  }

  /** The Service's own `loadBalancerIP` when the pool has it free, else the lowest free address. */
  private pick(s: V1Service): string | undefined {
    const wanted = s.spec?.loadBalancerIP;
    if (wanted !== undefined && wanted !== '') {
      const n = parseCidr(`${wanted}/32`) === undefined ? -1 : toNumber(wanted);
      return n >= this.first && n <= this.last && !this.given.has(wanted) ? wanted : undefined;
    }
    for (let n = this.first; n <= this.last; n++) if (!this.given.has(toAddress(n))) return toAddress(n);
    return undefined;
  }

  private async release(key: string): Promise<void> {
    for (const [address, k] of this.given) {
      if (k !== key) continue;
      this.given.delete(address);
      await ip('-n', this.announce.netns, 'addr', 'del', `${address}/32`, 'dev', this.announce.link).catch(
        (e: unknown) => this.log.debug({ error: describeError(e) }, 'address already gone'),
      );
      this.log.info({ service: key, address }, 'LoadBalancer address released');
    }
  }
}
