import { closeSync } from 'node:fs';
import { describeError, MeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { netnsId, sameNetns, type NetnsId } from '../../native/native.js';
import type { WorkloadInfo } from '../../zds/workload-info.js';
import type { MetricsRegistry } from '../admin/prom-client-core.js';
import type { InpodProxyRunner } from './inpod-proxy-runner.js';
import { WorkloadManagerMetrics } from './workload-manager-metrics.js';
import type { WorkloadMessage } from './workload-message.js';

interface PendingWorkload {
  readonly info: WorkloadInfo;
  readonly netns: number;
  readonly id: NetnsId;
}

/**
 * ztunnel's in-pod workload state (ztunnel `src/inpod/statemanager.rs`): which pods have a running proxy, which
 * failed to start and wait for a retry, and what the snapshot of the current ZDS connection has named so far.
 * Messages come one at a time (the caller awaits each `processMsg`), in the order the node agent sent them.
 *
 * `processMsg` throws `ZDS_ERR_PROTOCOL` for a message the protocol forbids (an Add without workload_info, Keep
 * after SnapshotSent, a second SnapshotSent: the connection cannot go on), and `ZDS_ERR_PROXY_START` when a pod's
 * proxy did not start (the node agent gets a nack, the pod stays pending and `retryPending` tries it again).
 *
 * With a metrics registry, it keeps ztunnel's `workload_manager_*` metrics: proxies running and pending, proxies
 * started and stopped.
 *
 * fd ownership: an Add's fd is this object's. It goes to the runner when the proxy starts; it is kept while the pod
 * is pending; it is closed when not needed (same netns already running, Del, a new connection, `stopAll`).
 */
export class WorkloadProxyManagerState {
  /** uid -> the netns its running proxy listens in. */
  private readonly running = new Map<string, NetnsId>();
  private readonly pendingWorkloads = new Map<string, PendingWorkload>();
  private snapshotReceived = false;
  /** Pods Added or Kept on this connection before SnapshotSent. */
  private readonly snapshotNames = new Set<string>();
  private readonly metrics: WorkloadManagerMetrics | undefined;

  constructor(
    private readonly runner: InpodProxyRunner,
    private readonly log: Logger,
    registry?: MetricsRegistry,
  ) {
    this.metrics =
      registry &&
      new WorkloadManagerMetrics(registry, {
        active: () => this.running.size,
        pending: () => this.pendingWorkloads.size,
      });
  }

  /** On each new connection: a new snapshot begins, pending pods are forgotten; running proxies keep running. */
  resetSnapshot(): void {
    this.snapshotNames.clear();
    for (const uid of [...this.pendingWorkloads.keys()]) this.dropPending(uid);
    this.snapshotReceived = false;
  }

  /** Ready once the snapshot of this connection has arrived and no pod waits for its proxy to start. */
  ready(): boolean {
    return this.snapshotReceived && this.pendingWorkloads.size === 0;
  }

  /** The uids whose proxy failed to start and is retried. */
  pendingUids(): string[] {
    return [...this.pendingWorkloads.keys()];
  }

  /** The uids with a running proxy. */
  runningUids(): string[] {
    return [...this.running.keys()];
  }

  async processMsg(msg: WorkloadMessage): Promise<void> {
    switch (msg.kind) {
      case 'add': {
        this.log.info(
          { uid: msg.uid, name: msg.info?.name, namespace: msg.info?.namespace },
          "AddWorkload: starting the pod's proxy",
        );
        if (msg.info === undefined) {
          closeSync(msg.netns);
          throw new MeshError('ZDS_ERR_PROTOCOL', `AddWorkload for ${msg.uid} has no workload_info`);
        }
        if (!this.snapshotReceived) this.snapshotNames.add(msg.uid);
        let id: NetnsId;
        try {
          id = netnsId(msg.netns);
        } catch (e) {
          closeSync(msg.netns);
          throw new MeshError(
            'ZDS_ERR_PROXY_START',
            `the fd sent with ${msg.uid} is not a network namespace: ${describeError(e)}`,
            { cause: e },
          );
        }
        await this.addWorkload(msg.uid, { info: msg.info, netns: msg.netns, id });
        return;
      }
      case 'keep':
        this.log.info({ uid: msg.uid }, "KeepWorkload: the pod's proxy stays after the snapshot");
        if (this.snapshotReceived)
          throw new MeshError('ZDS_ERR_PROTOCOL', `KeepWorkload for ${msg.uid} after SnapshotSent`);
        this.snapshotNames.add(msg.uid);
        return;
      case 'del':
        this.log.info({ uid: msg.uid }, "DelWorkload: stopping the pod's proxy");
        if (!this.snapshotReceived) {
          // A proxy an Add started before the snapshot goes at SnapshotSent, as it is no longer named; a pending
          // one would stay pending, so it goes now.
          this.snapshotNames.delete(msg.uid);
          this.dropPending(msg.uid);
          return;
        }
        this.delWorkload(msg.uid);
        return;
      case 'snapshotSent':
        this.log.info("SnapshotSent: the node agent's snapshot is complete");
        if (this.snapshotReceived) throw new MeshError('ZDS_ERR_PROTOCOL', 'a second SnapshotSent on one connection');
        this.reconcile();
        this.snapshotReceived = true;
        return;
    }
  }

  /** Tries every pending pod again; one that fails again stays pending. */
  async retryPending(): Promise<void> {
    const pending = [...this.pendingWorkloads];
    this.pendingWorkloads.clear();
    for (const [uid, workload] of pending) {
      this.log.info({ uid }, "starting a pending pod's proxy again");
      try {
        await this.addWorkload(uid, workload);
      } catch (e) {
        this.log.info({ uid, err: describeError(e) }, "pending pod's proxy still does not start");
      }
    }
  }

  /** Stops every proxy and forgets pending pods (ztunnel shutting down its in-pod mode). */
  stopAll(): void {
    for (const uid of [...this.pendingWorkloads.keys()]) this.dropPending(uid);
    for (const uid of [...this.running.keys()]) this.delWorkload(uid);
  }

  private async addWorkload(uid: string, workload: PendingWorkload): Promise<void> {
    const existing = this.running.get(uid);
    if (existing !== undefined) {
      if (sameNetns(existing, workload.id)) {
        // Idempotent: the proxy already listens in this netns (the runner holds its own fd on it).
        closeSync(workload.netns);
        this.dropPending(uid);
        return;
      }
      // The pod's sandbox was re-created with a new netns: the old proxy goes, a new one starts.
      this.delWorkload(uid);
    }
    try {
      await this.runner.start(uid, workload.info, workload.netns);
    } catch (e) {
      this.setPending(uid, workload);
      throw new MeshError('ZDS_ERR_PROXY_START', describeError(e), { cause: e });
    }
    this.dropPending(uid);
    this.running.set(uid, workload.id);
    this.metrics?.proxiesStarted.inc();
  }

  private delWorkload(uid: string): void {
    this.dropPending(uid);
    if (!this.running.delete(uid)) return;
    this.stopProxy(uid);
  }

  private stopProxy(uid: string): void {
    this.runner.stop(uid);
    this.metrics?.proxiesStopped.inc();
  }

  /** Stops every running proxy the snapshot did not name: its pod went while ztunnel was not connected. */
  private reconcile(): void {
    for (const uid of [...this.running.keys()]) {
      if (this.snapshotNames.has(uid)) continue;
      this.log.info({ uid }, 'stopping the proxy of a pod the snapshot left out');
      this.running.delete(uid);
      this.stopProxy(uid);
    }
    this.snapshotNames.clear();
  }

  private setPending(uid: string, workload: PendingWorkload): void {
    const before = this.pendingWorkloads.get(uid);
    if (before !== undefined && before.netns !== workload.netns) closeSync(before.netns);
    this.pendingWorkloads.set(uid, workload);
  }

  private dropPending(uid: string): void {
    const p = this.pendingWorkloads.get(uid);
    if (p === undefined) return;
    this.pendingWorkloads.delete(uid);
    closeSync(p.netns);
  }
}
