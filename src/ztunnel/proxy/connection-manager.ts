import type { Logger } from 'pino';
import { describeError, isMeshError, MeshError } from '../../lib/errors.js';
import { identityToString } from '../../lib/spiffe.js';
import { evaluate } from '../rbac.js';
import type { ProxyState } from '../state/proxy-state.js';
import { workloadIdentity } from '../state/workload.js';
import { trafficLabels, type ResponseFlags, type TrafficLabels, type ZtunnelMetrics } from '../admin/metrics.js';
import type { ConnectionInfo } from './connection-info.js';

/** The response flag of a connection that failed after it was established: policy, else ztunnel's default. */
function failureFlags(error: Error): ResponseFlags {
  return isMeshError(error, 'ZT_ERR_POLICY_DENIED') ? 'DENY' : 'CONNECT';
}

/** Bytes moved so far: client → server, server → client. Read from the sockets' own counters, never per chunk. */
export type ByteCounts = () => readonly [toServer: number, toClient: number];

export interface TrackedConnection {
  readonly info: ConnectionInfo;
  /** Records the end and the error if any. Idempotent. */
  finish(error: Error | undefined): void;
}

interface Entry extends TrackedConnection {
  readonly started: number;
  readonly abort: (why: string) => void;
  readonly bytes: ByteCounts;
  readonly labels: TrafficLabels;
  /** What the byte counters already include, so scrapes and the close add only the difference. */
  reported: [number, number];
  /** Set when a policy change closes the connection: it ends as that denial, whatever the relay saw. */
  closedBy: Error | undefined;
}

/**
 * Every live proxied connection: metrics, access logs (ztunnel `src/proxy/metrics.rs`), `/config_dump` `workloadState`
 * connections, policy re-evaluation on config change, and the drain on shutdown.
 */
export class ConnectionManager {
  private readonly live = new Set<Entry>();
  private readonly idleWaiters: (() => void)[] = [];

  constructor(
    private readonly metrics: ZtunnelMetrics,
    /** The access log (scope `access`), which proxies built on these parts write to as well. */
    readonly access: Logger,
    private readonly log: Logger,
  ) {}

  get size(): number {
    return this.live.size;
  }

  open(info: ConnectionInfo, abort: (why: string) => void, bytes: ByteCounts): TrackedConnection {
    const labels = trafficLabels(info.parties, '-');
    this.metrics.opened.inc(labels);
    this.metrics.socketsOpen.inc({ reporter: info.parties.reporter });
    let done = false;
    const entry: Entry = {
      info,
      started: performance.now(),
      abort,
      bytes,
      labels,
      reported: [0, 0],
      closedBy: undefined,
      finish: (relayError) => {
        if (done) return;
        done = true;
        const error = entry.closedBy ?? relayError;
        this.live.delete(entry);
        this.metrics.socketsOpen.dec({ reporter: info.parties.reporter });
        // As ztunnel records a result (src/proxy/metrics.rs, `ConnectionResult::record`): a connection that ends in
        // an error is closed and failed, labelled with the flag of its failure (ConnectionFailure by default).
        if (error === undefined) this.metrics.closed.inc(labels);
        else {
          const failedLabels = trafficLabels(info.parties, failureFlags(error));
          this.metrics.closed.inc(failedLabels);
          this.metrics.failed.inc(failedLabels);
        }
        const [toServer, toClient] = this.report(entry);
        const fields = {
          ...this.fields(info),
          bytes_sent: info.direction === 'inbound' ? toClient : toServer,
          bytes_recv: info.direction === 'inbound' ? toServer : toClient,
          duration: `${Math.round(performance.now() - entry.started)}ms`,
        };
        if (error !== undefined) this.access.error({ ...fields, error: describeError(error) }, 'connection complete');
        else this.access.info(fields, 'connection complete');
        if (this.live.size === 0) for (const w of this.idleWaiters.splice(0)) w();
      },
    };
    this.live.add(entry);
    if (this.access.isLevelEnabled('debug')) this.access.debug(this.fields(info), 'connection opened');
    return entry;
  }

  /**
   * Brings the byte counters up to date for live connections; called before each metrics scrape, so long-lived
   * connections show their traffic while open (as ztunnel's do) without any per-chunk work.
   */
  flushBytes(): void {
    for (const c of this.live) this.report(c);
  }

  private report(c: Entry): readonly [number, number] {
    const [toServer, toClient] = c.bytes();
    if (toServer > c.reported[0]) this.metrics.received.inc(c.labels, toServer - c.reported[0]);
    if (toClient > c.reported[1]) this.metrics.sent.inc(c.labels, toClient - c.reported[1]);
    c.reported = [Math.max(toServer, c.reported[0]), Math.max(toClient, c.reported[1])];
    return [toServer, toClient];
  }

  /** A connection refused before it was built (a bad request, an unknown workload): metric with response flags, WARN line. */
  failed(info: Omit<ConnectionInfo, 'rbac'>, flags: ResponseFlags, error: unknown): void {
    if (flags !== '-') this.metrics.failed.inc(trafficLabels(info.parties, flags));
    this.access.warn({ ...this.fields(info), error: describeError(error) }, 'connection failed');
  }

  /**
   * A connection built and then refused or failed before any byte moved (an RBAC deny, a failed dial, a non-200
   * CONNECT): as ztunnel's `ConnectionResult` (src/proxy/metrics.rs) it was opened, and is closed and failed with the
   * flag of its failure, and logged `connection complete` with `error=`.
   */
  builtThenFailed(info: Omit<ConnectionInfo, 'rbac'>, flags: ResponseFlags, error: unknown): void {
    this.metrics.opened.inc(trafficLabels(info.parties, '-'));
    const labels = trafficLabels(info.parties, flags);
    this.metrics.closed.inc(labels);
    if (flags !== '-') this.metrics.failed.inc(labels);
    this.access.error(
      { ...this.fields(info), bytes_sent: 0, bytes_recv: 0, error: describeError(error) },
      'connection complete',
    );
  }

  /** Re-checks every live inbound connection against the current policies and closes the newly denied ones. */
  reevaluate(state: ProxyState): void {
    for (const c of this.live) {
      if (c.info.rbac === undefined) continue;
      // An inbound connection's destination is its local workload.
      const uid = c.info.parties.destination?.uid;
      const w = uid === undefined ? undefined : state.workloadByUid(uid);
      if (w === undefined) {
        c.abort('destination workload removed');
        continue;
      }
      const d = evaluate(state.policiesFor(w), c.info.rbac);
      if (!d.allowed) {
        this.log.info(
          { src: c.info.src, dst: c.info.actualDst, reason: d.reason },
          'closing connection: no longer allowed by policy',
        );
        // ztunnel records such a connection as a late authorization rejection (DENY), not a completion.
        c.closedBy = new MeshError('ZT_ERR_POLICY_DENIED', `policy changed: ${d.reason}`);
        c.abort(`policy changed: ${d.reason}`);
      }
    }
  }

  /** Connections of one workload, for `/config_dump` `workloadState`. */
  connectionsOf(uid: string): { inbound: object[]; outbound: object[] } {
    const inbound: object[] = [];
    const outbound: object[] = [];
    for (const c of this.live) {
      if (c.info.workloadUid !== uid) continue;
      const o = {
        src: c.info.src,
        originalDst: c.info.originalDst,
        actualDst: c.info.actualDst,
        protocol: c.info.protocol,
      };
      (c.info.direction === 'inbound' ? inbound : outbound).push(o);
    }
    return { inbound, outbound };
  }

  /** Closes the connections of one workload (it left this node). */
  closeWorkload(uid: string, why: string): void {
    for (const c of this.live) if (c.info.workloadUid === uid) c.abort(why);
  }

  /** Waits until no connection is left or `deadlineMs` passes, then closes whatever remains. */
  async drain(deadlineMs: number): Promise<void> {
    if (this.live.size > 0) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, deadlineMs);
        t.unref();
        this.idleWaiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    for (const c of [...this.live]) c.abort('termination deadline reached');
  }

  private fields(info: Omit<ConnectionInfo, 'rbac'>): Record<string, string | number> {
    const p = info.parties;
    const f: Record<string, string | number> = { 'src.addr': info.src };
    if (p.source !== undefined) {
      f['src.workload'] = p.source.name;
      f['src.namespace'] = p.source.namespace;
      f['src.cluster'] = p.source.clusterId;
    } else if (p.derivedSource !== undefined) {
      // ztunnel names a source it does not know by what its baggage says: the canonical service as its workload.
      const d = p.derivedSource;
      if (d.serviceName !== undefined) f['src.workload'] = d.serviceName;
      if (d.namespace !== undefined) f['src.namespace'] = d.namespace;
      if (d.clusterId !== undefined) f['src.cluster'] = d.clusterId;
    }
    if (p.mtls && (p.sourceIdentity !== undefined || p.source !== undefined)) {
      f['src.identity'] = identityToString(p.sourceIdentity ?? workloadIdentity(p.source!));
    }
    f['dst.addr'] = info.actualDst;
    if (info.hboneAddr !== undefined) f['dst.hbone_addr'] = info.hboneAddr;
    if (p.destinationService !== undefined) f['dst.service'] = p.destinationService.hostname;
    if (p.destination !== undefined) {
      f['dst.workload'] = p.destination.name;
      f['dst.namespace'] = p.destination.namespace;
      f['dst.cluster'] = p.destination.clusterId;
      if (p.mtls) f['dst.identity'] = identityToString(workloadIdentity(p.destination));
    }
    f['direction'] = info.direction;
    return f;
  }
}
