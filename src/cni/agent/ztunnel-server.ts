import { EventEmitter } from 'node:events';
import { closeSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Gauge, type Registry as MetricsRegistry } from 'prom-client';
import { describeError, MeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { SeqpacketServer } from '../../native/seqpacket-socket.js';
import type { WorkloadInfo } from '../../zds/workload-info.js';
import { copyFd, ZDS_READ_WRITE_DEADLINE_MS, ZtunnelConnection } from './ztunnel-connection.js';
import type { SnapshotPod, ZtunnelLink } from './ztunnel-link.js';

/** Istio's limit on ZDS connections a node agent accepts (istio `cni/pkg/nodeagent/ztunnelserver.go` `Run`). */
const ZDS_ACCEPTS_PER_SECOND = 5;

export interface ZtunnelServerOptions {
  /** How long ztunnel has for its hello and each ack; default ZDS_READ_WRITE_DEADLINE_MS. */
  readonly readWriteDeadlineMs?: number;
  /** Default ZDS_ACCEPTS_PER_SECOND. */
  readonly acceptsPerSecond?: number;
  /** Where the `ztunnel_connected` gauge goes; none without it. */
  readonly metrics?: MetricsRegistry;
}

/**
 * The node agent's ZDS server (Istio `cni/pkg/nodeagent/ztunnelserver.go`): listens on a SEQPACKET socket
 * (`ZDS_SOCKET_PATH` in `src/zds/zds-socket-path.ts` by default), and
 * gives every ztunnel that connects the snapshot of the pods `snapshot()` returns, then the pods enrollment adds
 * (to the newest ztunnel) and deletes (to all, so an old ztunnel still draining during an upgrade drops them too).
 *
 * With a metrics registry it keeps Istio's `ztunnel_connected` gauge: how many ztunnels are connected, set as each
 * connects and leaves.
 *
 * Events: 'snapshot' (connection id) when a ztunnel acked its snapshot; 'disconnected' (connection id).
 *
 * It accepts at most 5 connections a second, as Istio's does: a node has one ztunnel (two during an upgrade),
 * and one reconnecting in a loop must not make the agent spend itself on snapshots. A failed accept (out of fds,
 * a ztunnel that left first) is logged and accepting goes on after a pause.
 */
export class ZtunnelServer extends EventEmitter<{ snapshot: [number]; disconnected: [number] }> implements ZtunnelLink {
  private server: SeqpacketServer | undefined;
  /** In the order they connected: the last one gets the Adds. */
  private readonly connections: ZtunnelConnection[] = [];
  private nextId = 1;
  private readonly connectedGauge: Gauge | undefined;

  constructor(
    readonly socketPath: string,
    private readonly snapshot: () => SnapshotPod[] | Promise<SnapshotPod[]>,
    private readonly log: Logger,
    private readonly options: ZtunnelServerOptions = {},
  ) {
    super();
    this.connectedGauge =
      options.metrics &&
      new Gauge({ name: 'ztunnel_connected', help: 'number of connections to ztunnel', registers: [options.metrics] });
  }

  /** Listens, first removing a socket file a previous agent left behind. */
  listen(): void {
    try {
      mkdirSync(path.dirname(this.socketPath), { recursive: true });
      rmSync(this.socketPath, { force: true });
      this.server = SeqpacketServer.listen(this.socketPath, {
        acceptsPerSecond: this.options.acceptsPerSecond ?? ZDS_ACCEPTS_PER_SECOND,
      });
    } catch (e) {
      throw new MeshError('ZDS_ERR_LISTEN', `cannot listen for ztunnel on ${this.socketPath}: ${describeError(e)}`, {
        cause: e,
      });
    }
    this.server.on('connection', (socket) => {
      const id = this.nextId++;
      this.log.info({ conn: id }, 'ztunnel connected');
      const conn = new ZtunnelConnection(
        id,
        socket,
        this.log,
        this.snapshot,
        () => this.emit('snapshot', id),
        this.options.readWriteDeadlineMs ?? ZDS_READ_WRITE_DEADLINE_MS,
      );
      this.connections.push(conn);
      this.connectedGauge?.set(this.connections.length);
      socket.on('close', () => {
        const at = this.connections.indexOf(conn);
        if (at >= 0) this.connections.splice(at, 1);
        this.connectedGauge?.set(this.connections.length);
        this.log.info({ conn: id, connected: this.connections.length }, 'ztunnel disconnected');
        this.emit('disconnected', id);
      });
    });
    this.server.on('acceptError', (e, retryMs) =>
      this.log.error(
        { err: describeError(e), path: this.socketPath, retryMs },
        'could not take a ztunnel connection; accepting again after a pause',
      ),
    );
    this.server.on('error', (e) =>
      this.log.error({ err: describeError(e), path: this.socketPath }, 'ZDS server stopped accepting'),
    );
  }

  get ready(): boolean {
    return this.connections.some((c) => c.snapshotAcked && !c.closed);
  }

  async addWorkload(uid: string, info: WorkloadInfo, netns: number): Promise<void> {
    const latest = this.connections.at(-1);
    if (latest === undefined)
      throw new MeshError('ZDS_ERR_NO_ZTUNNEL', `no ztunnel is connected to ${this.socketPath} to add pod ${uid}`);
    this.log.info(
      { conn: latest.id, uid, name: info.name, namespace: info.namespace, serviceAccount: info.serviceAccount },
      'AddWorkload to the newest ztunnel',
    );
    // The caller may close its fd (and the number be reused) while the request waits its turn: send a copy.
    const copy = copyFd(netns);
    let error: string;
    try {
      error = await latest.send({ kind: 'add', uid, info }, copy);
    } finally {
      closeSync(copy);
    }
    if (error !== '') throw new MeshError('ZDS_ERR_NACK', `ztunnel could not add pod ${uid}: ${error}`);
  }

  async delWorkload(uid: string): Promise<void> {
    await Promise.all(
      this.connections.map((conn) =>
        conn.send({ kind: 'del', uid }).then(
          (error) => {
            if (error !== '') this.log.warn({ conn: conn.id, uid, ackError: error }, 'ztunnel nacked the pod delete');
          },
          (e: unknown) =>
            this.log.warn(
              { conn: conn.id, uid, err: describeError(e) },
              'pod delete not acked; the connection is gone',
            ),
        ),
      ),
    );
  }

  /** Stops listening (removing the socket file) and closes every ztunnel connection. */
  close(): void {
    this.server?.close();
    for (const conn of [...this.connections]) conn.close();
  }
}
