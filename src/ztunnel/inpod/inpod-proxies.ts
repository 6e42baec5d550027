import { closeSync } from 'node:fs';
import { describeError, MeshError } from '../../lib/errors.js';
import { identityToString } from '../../lib/spiffe.js';
import type { WorkloadInfo } from '../../zds/workload-info.js';
import { workloadStateEntry } from '../admin/workload-state.js';
import type { InpodConfig } from '../config.js';
import { HbonePool, poolSettings } from '../proxy/hbone-pool.js';
import { InboundHbone } from '../proxy/inbound.js';
import { inboundPassthroughListener } from '../proxy/inbound-passthrough.js';
import { LocalWorkloadInformation } from '../proxy/local-workload.js';
import { Outbound } from '../proxy/outbound.js';
import { outboundCaptureListener } from '../proxy/outbound-capture.js';
import type { ProxyContext } from '../proxy/proxy-context.js';
import { workloadIdentity } from '../state/workload.js';
import type { InpodProxyRunner } from './inpod-proxy-runner.js';
import { NetnsSocketFactory } from './netns-socket-factory.js';

/** ztunnel's bind wildcards (ztunnel `src/config.rs` `bind_wildcard`): one per family, our IPv6 sockets being IPv6-only. */
const WILDCARD_V4 = '0.0.0.0';
const WILDCARD_V6 = '::';

/** What a pod's DNS proxy (15053) is started with: its netns, the mark its sockets must carry, and INPOD_PORT_REUSE. */
export interface PodDnsTarget {
  readonly uid: string;
  readonly netns: number;
  readonly mark: number;
  readonly reusePort: boolean;
  readonly local: LocalWorkloadInformation;
}

/** Starts a pod's DNS proxy on 15053 inside its netns (ztunnel `src/dns/server.rs`); resolves once it is bound. */
export type PodDnsStarter = (pod: PodDnsTarget) => Promise<{ close(): void }>;

interface Listener {
  readonly address: string;
  start(): Promise<void>;
  close(immediate: boolean): void;
}

interface PodProxy {
  readonly uid: string;
  readonly info: WorkloadInfo;
  readonly netns: number;
  readonly local: LocalWorkloadInformation;
  readonly sockets: NetnsSocketFactory;
  readonly pool: HbonePool;
  readonly listeners: readonly Listener[];
  readonly dns: { close(): void } | undefined;
}

/**
 * The proxies of the pods on this node, in-pod mode (ztunnel `src/proxyfactory.rs` `new_proxies_for_dedicated`, as
 * `src/inpod/statemanager.rs` drives it): for each pod, listeners inside its network namespace on ztunnel's ports
 * (15001 outbound capture, 15006 inbound plaintext, 15008 HBONE, and 15053 DNS when a DNS proxy is given), with
 * the pod's own socket factory and HBONE pool, so every byte to and from the pod leaves from its namespace with the
 * in-pod mark. The pod's workload is the one istiod sends with ZDS's name, namespace and service account; it is
 * looked up per connection, so a pod's listeners start before istiod knows the pod.
 */
export class InpodProxies implements InpodProxyRunner {
  private readonly pods = new Map<string, PodProxy>();
  /** Shutting down: no pod starts any more (the node agent gives it to the ztunnel that replaces this one). */
  private closing = false;

  constructor(
    private readonly ctx: ProxyContext,
    private readonly inpod: InpodConfig,
    private readonly startDns: PodDnsStarter | undefined,
  ) {}

  async start(uid: string, info: WorkloadInfo, netns: number): Promise<void> {
    if (this.closing) throw new MeshError('ZT_ERR_SHUTTING_DOWN', `not starting pod ${uid}: ztunnel is shutting down`);
    this.stop(uid);
    const { config, state, log } = this.ctx;
    const sockets = new NetnsSocketFactory(netns, { mark: this.inpod.mark, reusePort: this.inpod.portReuse });
    const pool = new HbonePool(poolSettings(config), sockets, log);
    const ctx: ProxyContext = { ...this.ctx, sockets, pool };
    const local = LocalWorkloadInformation.byInfo(state, config.nodeName, uid, info);
    const outbound = new Outbound(ctx, local);
    const hosts = config.ipv6Enabled ? [WILDCARD_V4, WILDCARD_V6] : [WILDCARD_V4];
    const listeners: Listener[] = hosts.flatMap((h) => [
      outboundCaptureListener(ctx, outbound, h),
      inboundPassthroughListener(ctx, local, h),
      new InboundHbone(ctx, local, h),
    ]);
    let dns: { close(): void } | undefined;
    try {
      for (const l of listeners) await l.start();
      dns = await this.startDns?.({ uid, netns, mark: this.inpod.mark, reusePort: this.inpod.portReuse, local });
    } catch (e) {
      for (const l of listeners) l.close(true);
      sockets.close();
      pool.destroy();
      log.error(
        { pod: uid, name: `${info.namespace}/${info.name}`, error: describeError(e) },
        'failed to start the pod proxy',
      );
      throw e;
    }
    this.pods.set(uid, { uid, info, netns, local, sockets, pool, listeners, dns });
    log.info(
      { pod: uid, name: `${info.namespace}/${info.name}`, listeners: listeners.map((l) => l.address) },
      'pod proxy started in the pod network namespace',
    );
  }

  stop(uid: string): void {
    const p = this.pods.get(uid);
    if (p === undefined) return;
    this.pods.delete(uid);
    this.closePod(p);
    this.ctx.connections.closeWorkload(uid, 'pod removed from this ztunnel');
    // Certificates of identities no other pod here uses stop refreshing.
    this.ctx.secrets.retain(
      new Set(
        [...this.pods.values()].flatMap((o) => {
          const w = o.local.current();
          return w === undefined ? [] : [identityToString(workloadIdentity(w))];
        }),
      ),
    );
    this.ctx.log.info({ pod: uid, name: `${p.info.namespace}/${p.info.name}` }, 'pod proxy stopped');
  }

  /** `/config_dump` `workloadState`, by pod UID. */
  dump(): Record<string, object> {
    const out: Record<string, object> = {};
    for (const p of this.pods.values())
      out[p.uid] = workloadStateEntry(true, p.info, this.ctx.connections.connectionsOf(p.uid));
    return out;
  }

  /**
   * Shutdown: stops accepting in every pod (new connections go to a ztunnel sharing the ports through SO_REUSEPORT);
   * with `immediate`, closes every pod's connections and namespace fd too.
   */
  close(immediate: boolean): void {
    this.closing = true;
    for (const p of this.pods.values()) {
      if (immediate) this.closePod(p);
      else {
        for (const l of p.listeners) l.close(false);
        p.dns?.close();
        p.pool.close();
      }
    }
    if (immediate) this.pods.clear();
  }

  private closePod(p: PodProxy): void {
    for (const l of p.listeners) l.close(true);
    p.dns?.close();
    p.pool.destroy();
    p.sockets.close();
    closeSync(p.netns);
  }
}
