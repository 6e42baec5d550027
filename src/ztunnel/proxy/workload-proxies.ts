import { describeError } from '../../lib/errors.js';
import { workloadStateEntry } from '../admin/workload-state.js';
import { identityToString } from '../../lib/spiffe.js';
import { workloadIdentity, type Workload } from '../state/workload.js';
import { InboundHbone } from './inbound.js';
import { LocalWorkloadInformation } from './local-workload.js';
import { Outbound } from './outbound.js';
import type { ProxyContext } from './proxy-context.js';
import { Socks5Listener } from './socks5.js';

/** A failed start is retried this often (ztunnel retries pending workloads every 5s). */
const RETRY_MS = 5_000;

type ProxyState = { t: 'starting' } | { t: 'up' } | { t: 'failed'; error: string } | { t: 'stopped' };

interface WorkloadProxy {
  readonly uid: string;
  /** What the listeners depend on; a change means restart. */
  readonly signature: string;
  readonly identity: string;
  readonly inbound: InboundHbone[];
  readonly socks: Socks5Listener[];
  state: ProxyState;
  retry: NodeJS.Timeout | undefined;
}

/** Re-reads the state after an await (TypeScript keeps the narrowing from before it). */
function stopped(p: WorkloadProxy): boolean {
  return p.state.t === 'stopped';
}

/**
 * The listeners of every workload on this node (local mode: workloads whose `node` is NODE_NAME): HBONE inbound on
 * `<ip>:15008` and SOCKS5 on `<ip>:15080`, kept in step with the config.
 */
export class WorkloadProxyManager {
  private readonly proxies = new Map<string, WorkloadProxy>();
  private closed = false;

  constructor(private readonly ctx: ProxyContext) {
    // A proxy that failed for want of this certificate starts now rather than at its next retry.
    ctx.secrets.on('updated', (id) => {
      for (const p of this.proxies.values()) {
        if (p.identity !== id) continue;
        if (p.state.t === 'failed') {
          clearTimeout(p.retry);
          p.state = { t: 'starting' };
          void this.bring(p);
        }
      }
    });
  }

  /** Starts, restarts or stops workload proxies to match the current state. */
  reconcile(): void {
    if (this.closed) return;
    const want = new Map<string, Workload>();
    for (const w of this.ctx.state.workloadsOnNode(this.ctx.config.nodeName))
      if (w.workloadIps.length > 0) want.set(w.uid, w);
    for (const [uid, p] of this.proxies) {
      const w = want.get(uid);
      if (w === undefined || this.signature(w) !== p.signature) {
        this.stop(p, w === undefined ? 'workload removed from this node' : 'workload changed');
        this.proxies.delete(uid);
      }
    }
    for (const [uid, w] of want) if (!this.proxies.has(uid)) this.start(w);
    this.ctx.secrets.retain(new Set([...this.proxies.values()].map((p) => p.identity)));
  }

  /** Workloads whose listeners are not up yet, for readiness. */
  pending(): string[] {
    return [...this.proxies.values()]
      .filter((p) => p.state.t !== 'up')
      .map((p) => `${p.uid}: ${p.state.t === 'failed' ? p.state.error : p.state.t}`);
  }

  /** `/config_dump` `workloadState`. */
  dump(): Record<string, object> {
    const out: Record<string, object> = {};
    for (const p of this.proxies.values()) {
      const w = this.ctx.state.workloadByUid(p.uid);
      const info = {
        name: w?.name ?? '',
        namespace: w?.namespace ?? '',
        serviceAccount: w === undefined ? '' : workloadIdentity(w).serviceAccount,
      };
      out[p.uid] = workloadStateEntry(p.state.t === 'up', info, this.ctx.connections.connectionsOf(p.uid));
    }
    return out;
  }

  /** Stops accepting everywhere; with `immediate`, closes HBONE sessions too. */
  close(immediate: boolean): void {
    this.closed = true;
    for (const p of this.proxies.values()) {
      clearTimeout(p.retry);
      for (const l of p.inbound) l.close(immediate);
      for (const l of p.socks) l.close(immediate);
    }
  }

  private signature(w: Workload): string {
    return `${identityToString(workloadIdentity(w))}|${w.workloadIps.join(',')}|${w.network}`;
  }

  private start(w: Workload): void {
    const local = LocalWorkloadInformation.byUid(this.ctx.state, w.uid);
    const outbound = new Outbound(this.ctx, local);
    const p: WorkloadProxy = {
      uid: w.uid,
      signature: this.signature(w),
      identity: identityToString(workloadIdentity(w)),
      inbound: w.workloadIps.map((ip) => new InboundHbone(this.ctx, local, ip)),
      socks: this.ctx.config.enableSocks5
        ? w.workloadIps.map((ip) => new Socks5Listener(this.ctx, w.uid, ip, outbound))
        : [],
      state: { t: 'starting' },
      retry: undefined,
    };
    this.proxies.set(w.uid, p);
    void this.bring(p);
  }

  private async bring(p: WorkloadProxy): Promise<void> {
    const w = this.ctx.state.workloadByUid(p.uid);
    if (w === undefined || p.state.t === 'stopped') return;
    try {
      // The certificate is there before the listeners are: a workload whose identity cannot be served is not up.
      await this.ctx.secrets.fetch(workloadIdentity(w));
      for (const l of p.inbound) await l.start();
      for (const l of p.socks) await l.start();
      if (stopped(p)) {
        for (const l of p.inbound) l.close(true);
        for (const l of p.socks) l.close(true);
        return;
      }
      p.state = { t: 'up' };
      this.ctx.log.info(
        { workload: p.uid, hbone: p.inbound.map((l) => l.address), socks5: p.socks.map((l) => l.address) },
        'workload proxy started',
      );
    } catch (e) {
      for (const l of p.inbound) l.close(true);
      for (const l of p.socks) l.close(true);
      if (stopped(p)) return;
      p.state = { t: 'failed', error: describeError(e) };
      this.ctx.log.error(
        { workload: p.uid, error: describeError(e), retryInMs: RETRY_MS },
        'failed to start workload proxy',
      );
      p.retry = setTimeout(() => {
        p.state = { t: 'starting' };
        void this.bring(p);
      }, RETRY_MS);
      p.retry.unref();
    }
  }

  private stop(p: WorkloadProxy, why: string): void {
    p.state = { t: 'stopped' };
    clearTimeout(p.retry);
    for (const l of p.inbound) l.close(true);
    for (const l of p.socks) l.close(true);
    this.ctx.connections.closeWorkload(p.uid, why);
    this.ctx.log.info({ workload: p.uid, reason: why }, 'workload proxy stopped');
  }
}
