/**
 * Allocates addresses to ServiceEntries that have none, as istio `pilot/pkg/controllers/ipallocate/ipallocate.go`
 * does, writing them to `status.addresses` (one IPv4 and one IPv6 per host, `{value, host}`) through the status
 * subresource, from which the model serves them as the hosts' VIPs (`model/ip-autoallocation.ts`).
 *
 * - Which: a ServiceEntry `shouldAutoAllocateIp` takes (resolution not NONE, no `spec.addresses`, not opted out by
 *   label); each of its hosts once, wildcard hosts only under DYNAMIC_DNS. One that no longer qualifies has its
 *   allocated addresses cleared, and they are freed.
 * - Stability: an address once written stays its host's. Nothing is kept but the status: on start, once the
 *   informer has listed, every address in the prefixes that a ServiceEntry holds (allocated or in its spec) is
 *   recorded as used before anything is allocated, so a restart hands out the same addresses to no one else. A
 *   host added later gets the next free address; a host dropped loses its own. Addresses of a deleted
 *   ServiceEntry are not reused until the next start, as upstream leaves them.
 * - Conflicts: an address two ServiceEntries hold (found when recording it) is resolved by reallocating every
 *   holder that got it allocated but the oldest, or all of them when one names it in `spec.addresses`.
 * - Writes are JSON patches that first `test` the status they were computed from, so a status changed meanwhile
 *   fails the write, whose newly allocated addresses are freed, and the ServiceEntry is retried from the
 *   informer's next view (5 attempts, as upstream's queue).
 *
 * Objects are read as the model reads them (checked against the manifest schemas): one the schemas refuse is not
 * served, and not allocated for either.
 */
import {
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import type { RestartingInformer } from '../kube/informer.js';
import { describeKubeError } from '../kube/kube-status.js';
import { ReconcileQueue } from '../kube/reconcile-queue.js';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import { MeshError } from '../lib/errors.js';
import { canonicalIp, canonicalUnmappedIp } from '../lib/ip.js';
import type { Logger } from '../lib/log.js';
import { autoAllocatedAddresses, shouldAutoAllocateIp, takesAutoAllocatedAddress } from './model/ip-autoallocation.js';
import { serviceEntryHosts } from './model/services.js';
import { PrefixAllocator, type AllocationPrefix } from './prefix-allocator.js';
import { isResource, type ResourceOf } from './registry/manifest-dir.js';
import { checkApiObject, WATCHED_KINDS } from './registry/kube-source.js';

type ServiceEntry = ResourceOf<'ServiceEntry'>;

const SERVICE_ENTRIES = WATCHED_KINDS.find((w) => w.kind === 'ServiceEntry')!;
const GROUP = { group: 'networking.istio.io', version: 'v1', plural: 'serviceentries' } as const;
/** ipallocate.go's `controllers.WithMaxAttempts(5)`. */
const MAX_ATTEMPTS = 5;
/** Queue keys are `namespace/name` of a ServiceEntry, or this, the finder's `namespace/name`, and the addresses. */
const CONFLICT = 'conflict ';

/** One entry of `status.addresses`. */
interface StatusAddress {
  readonly value: string;
  readonly host: string;
}

/** A ServiceEntry as checked, with its `status` as the API holds it (what a write tests against). */
interface Read {
  readonly se: ServiceEntry;
  readonly rawStatus: unknown;
}

const ownerOf = (se: ServiceEntry): string => `${se.metadata.namespace}/${se.metadata.name}`;

/** The addresses of `spec.addresses` that are plain IPs (a CIDR is not one address). */
const specAddresses = (se: ServiceEntry): string[] =>
  (se.spec.addresses ?? []).flatMap((a) => canonicalIp(a ?? '') ?? []);

const allocatedOf = (se: ServiceEntry): string[] => [...autoAllocatedAddresses(se).values()].flat();

export class IpAutoallocator {
  private readonly api: CustomObjectsApi;
  private readonly informer: RestartingInformer<KubernetesObject>;
  private readonly queue: ReconcileQueue;
  private readonly v4: PrefixAllocator;
  private readonly v6: PrefixAllocator;
  private stopped = false;

  constructor(
    kc: KubeConfig,
    informers: SharedInformerFactory,
    prefixes: { readonly ipv4: AllocationPrefix; readonly ipv6: AllocationPrefix },
    private readonly log: Logger,
  ) {
    this.api = kc.makeApiClient(CustomObjectsApi);
    this.v4 = new PrefixAllocator(prefixes.ipv4);
    this.v6 = new PrefixAllocator(prefixes.ipv6);
    this.queue = new ReconcileQueue((key) => this.reconcile(key), MAX_ATTEMPTS, log);
    this.informer = informers.informerFor(SERVICE_ENTRIES.path);
    const enqueue = (o: KubernetesObject): void =>
      this.queue.add(`${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`);
    this.informer.addEventHandler({ add: enqueue, update: enqueue, delete: enqueue });
  }

  /** Once the informer (which the factory starts) has listed: records the addresses in use, then reconciles. */
  start(): void {
    void this.informer.synced.then(() => {
      if (this.stopped) return;
      for (const o of this.informer.list()) {
        const r = this.read(o);
        if (r === undefined) continue;
        this.markUsedOrQueueConflict(specAddresses(r.se), ownerOf(r.se));
        this.markUsedOrQueueConflict(allocatedOf(r.se), ownerOf(r.se));
      }
      this.queue.run();
    });
  }

  stop(): void {
    this.stopped = true;
    this.queue.stop();
  }

  private read(o: KubernetesObject | undefined): Read | undefined {
    if (o === undefined) return undefined;
    const m = checkApiObject(SERVICE_ENTRIES, o).manifest;
    if (m === undefined || !isResource(m) || m.kind !== 'ServiceEntry') return undefined;
    return { se: m, rawStatus: (o as { status?: unknown }).status };
  }

  private async reconcile(key: string): Promise<void> {
    if (key.startsWith(CONFLICT)) {
      const [, finder = '', addresses = ''] = key.split(' ');
      await this.resolveConflict(finder, addresses.split(','));
      return;
    }
    const [namespace = '', name = ''] = key.split('/');
    const r = this.read(this.informer.get(name, namespace));
    if (r === undefined) return;
    if (!shouldAutoAllocateIp(r.se, true)) {
      this.markUsedOrQueueConflict(specAddresses(r.se), ownerOf(r.se));
      if ((r.se.status.addresses?.length ?? 0) > 0) await this.clearStaleAddresses(r);
      return;
    }
    const plan = this.plan(r.se, false);
    if (plan === undefined) return;
    try {
      await this.patch(r.se, replaceAddresses(r.rawStatus, plan.addresses));
    } catch (e) {
      // No status yet: the write that adds one, provided there still is none.
      try {
        await this.patch(r.se, addStatus(plan.addresses));
      } catch (e2) {
        this.log.error({ serviceEntry: ownerOf(r.se), error: (e2 as Error).message }, 'cannot write status.addresses');
        this.free(plan.allocated, ownerOf(r.se));
        throw e;
      }
    }
    this.log.info({ serviceEntry: ownerOf(r.se), addresses: plan.addresses }, 'status.addresses written');
  }

  /**
   * What `status.addresses` should be: each host that takes allocated addresses keeps those it has, and one
   * without (every one, when `reassign`) gets the next free IPv4 and IPv6 address. Undefined when the status
   * already has addresses for exactly those hosts. Without `reassign`, the addresses it has are recorded first.
   */
  private plan(se: ServiceEntry, reassign: boolean): { addresses: StatusAddress[]; allocated: string[] } | undefined {
    const owner = ownerOf(se);
    const existing = autoAllocatedAddresses(se);
    const hosts = [...new Set(serviceEntryHosts(se).filter((h) => takesAutoAllocatedAddress(se, h)))];
    if (!reassign) {
      this.markUsedOrQueueConflict([...existing.values()].flat(), owner);
      if (hosts.length === existing.size && hosts.every((h) => existing.has(h))) return undefined;
    }
    const allocated: string[] = [];
    const addresses: StatusAddress[] = [];
    for (const host of hosts) {
      let ips = reassign ? undefined : existing.get(host);
      if (ips === undefined) {
        ips = this.nextAddresses(owner);
        allocated.push(...ips);
      }
      for (const value of ips) addresses.push({ value, host });
    }
    return { addresses, allocated };
  }

  /** The next free IPv4 and IPv6 addresses, for `owner`; a prefix that is exhausted gives none. */
  private nextAddresses(owner: string): string[] {
    const out: string[] = [];
    for (const [family, pool] of [
      ['IPv4', this.v4],
      ['IPv6', this.v6],
    ] as const) {
      const ip = pool.allocateNext(owner);
      if (ip === undefined)
        this.log.error({ serviceEntry: owner, prefix: pool.prefix.text }, `failed to allocate an ${family} address`);
      else out.push(ip);
    }
    return out;
  }

  /** The pool of an address (canonical, unmapped), by family. */
  private poolOf(ip: string): PrefixAllocator {
    return ip.includes(':') ? this.v6 : this.v4;
  }

  /** Records `addresses` as `owner`'s; those another holds are queued as one conflict. */
  private markUsedOrQueueConflict(addresses: readonly string[], owner: string): void {
    const conflicting = addresses.flatMap((a) => {
      const ip = canonicalUnmappedIp(a);
      if (ip === undefined) return [];
      const { used, usedByOwner } = this.poolOf(ip).markUsed(ip, owner);
      return used && !usedByOwner ? [ip] : [];
    });
    if (conflicting.length > 0) this.queue.add(`${CONFLICT}${owner} ${conflicting.join(',')}`);
  }

  private free(addresses: readonly string[], owner: string): void {
    for (const a of addresses) {
      const ip = canonicalUnmappedIp(a);
      if (ip !== undefined) this.poolOf(ip).free(ip, owner);
    }
  }

  /**
   * Gives new addresses to the holders of `addresses` that got them allocated, oldest first, all but the oldest
   * unless one of the holders names one in its `spec.addresses`, in which case all.
   */
  private async resolveConflict(finder: string, addresses: readonly string[]): Promise<void> {
    const allocatedHolders: Read[] = [];
    let named = false;
    for (const o of this.informer.list()) {
      const r = this.read(o);
      if (r === undefined) continue;
      const own = (list: string[]): boolean => list.some((a) => addresses.includes(canonicalUnmappedIp(a) ?? ''));
      if (own(allocatedOf(r.se))) allocatedHolders.push(r);
      if (own(specAddresses(r.se))) named = true;
    }
    const created = (r: Read): number => Date.parse(r.se.metadata.creationTimestamp ?? '') || 0;
    allocatedHolders.sort((a, b) => created(a) - created(b) || (ownerOf(a.se) < ownerOf(b.se) ? -1 : 1));
    const errors: unknown[] = [];
    for (const r of allocatedHolders.slice(named ? 0 : 1)) {
      this.log.warn(
        { serviceEntry: ownerOf(r.se), addresses, foundBy: finder },
        'reassigned due to IP address conflict',
      );
      const plan = this.plan(r.se, true)!;
      try {
        await this.patch(r.se, replaceAddresses(r.rawStatus, plan.addresses));
      } catch (e) {
        this.free(plan.allocated, ownerOf(r.se));
        errors.push(e);
      }
    }
    if (errors.length > 0) throw errors[0];
  }

  /** Empties `status.addresses` of a ServiceEntry that no longer qualifies, and frees what it held. */
  private async clearStaleAddresses(r: Read): Promise<void> {
    const owner = ownerOf(r.se);
    const held = allocatedOf(r.se);
    try {
      await this.patch(r.se, replaceAddresses(r.rawStatus, []));
    } catch {
      // The status changed since it was read: read it again and try once more.
      const again = this.read(this.informer.get(r.se.metadata.name, r.se.metadata.namespace));
      if (again !== undefined && (again.se.status.addresses?.length ?? 0) > 0)
        await this.patch(again.se, replaceAddresses(again.rawStatus, []));
    }
    this.free(held, owner);
    this.log.info({ serviceEntry: owner }, 'allocated addresses cleared: no longer needed');
  }

  private async patch(se: ServiceEntry, body: object[]): Promise<void> {
    const { namespace, name } = se.metadata;
    try {
      await this.api.patchNamespacedCustomObjectStatus(
        { ...GROUP, namespace, name, body },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      );
    } catch (e) {
      throw new MeshError(
        'ISTIOD_ERR_KUBE_API',
        `cannot write status.addresses of ServiceEntry ${namespace}/${name}: ${describeKubeError(e)}`,
        { cause: e },
      );
    }
  }
}

/** Replaces `status.addresses`, provided it is still what `rawStatus` holds. */
function replaceAddresses(rawStatus: unknown, addresses: readonly StatusAddress[]): object[] {
  const current = (rawStatus as { addresses?: unknown } | undefined)?.addresses ?? null;
  return [
    { op: 'test', path: '/status/addresses', value: current },
    { op: 'replace', path: '/status/addresses', value: addresses },
  ];
}

/** Adds a status holding only `addresses`, provided there is none. */
function addStatus(addresses: readonly StatusAddress[]): object[] {
  return [
    { op: 'test', path: '/status', value: null },
    { op: 'add', path: '/status', value: {} },
    { op: 'add', path: '/status/addresses', value: addresses },
  ];
}
