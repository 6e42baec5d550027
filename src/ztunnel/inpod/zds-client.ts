import { EventEmitter } from 'node:events';
import { closeSync } from 'node:fs';
import { Backoff } from '../../lib/backoff.js';
import { describeError, isMeshError, MeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { SeqpacketSocket } from '../../native/seqpacket-socket.js';
import { sendDatagram } from '../../zds/send-datagram.js';
import { encodeAck, encodeHello } from '../../zds/zds-codec.js';
import type { MetricsRegistry } from '../admin/prom-client-core.js';
import type { InpodProxyRunner } from './inpod-proxy-runner.js';
import { readWorkloadMessage, type WorkloadMessage } from './workload-message.js';
import { WorkloadProxyManagerState } from './workload-proxy-manager-state.js';

/** First reconnect delay, doubled after each failure (ztunnel `src/inpod/workloadmanager.rs`). */
const ZDS_CONNECT_BACKOFF_INITIAL_MS = 10;
/** Longest reconnect delay: the node agent may be down for a while (a rollout), ztunnel keeps trying. */
const ZDS_CONNECT_BACKOFF_MAX_MS = 15_000;
/** How often pods whose proxy failed to start are tried again (ztunnel's `RETRY_DURATION`). */
const ZDS_PENDING_RETRY_MS = 5_000;

export interface ZdsClientOptions {
  /** How often pods whose proxy failed to start are tried again; default ZDS_PENDING_RETRY_MS. */
  readonly pendingRetryMs?: number;
  /** Where ztunnel's `workload_manager_*` metrics go; none without it. */
  readonly metrics?: MetricsRegistry;
}

/** One connection to the node agent; its datagrams are handled one after another, in order, on `work`. */
interface Connection {
  readonly socket: SeqpacketSocket;
  work: Promise<void>;
  retryTimer: NodeJS.Timeout | undefined;
  closed: boolean;
}

/**
 * ztunnel's ZDS client (ztunnel `src/inpod/workloadmanager.rs`, `protocol.rs`): connects to the node agent's
 * SEQPACKET socket, sends `ZdsHello`, then answers every `WorkloadRequest` with an ack once the state manager has
 * acted on it, or a nack: `failure to read message : ...` (then it drops the connection and reconnects),
 * `failure to start proxy : ...` (the pod is retried every 5 s), `failure to process message : ...` (a protocol
 * error: it stops for good and emits 'stopped', on which ztunnel exits, as Istio's does).
 *
 * Events: 'ready' (boolean) when readiness changes; 'stopped' (error) after a protocol error.
 */
export class ZdsClient extends EventEmitter<{ ready: [boolean]; stopped: [MeshError] }> {
  private readonly state: WorkloadProxyManagerState;
  private readonly backoff = new Backoff(ZDS_CONNECT_BACKOFF_INITIAL_MS, ZDS_CONNECT_BACKOFF_MAX_MS);
  private connection: Connection | undefined;
  private connectTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private closed = false;
  private wasReady = false;

  constructor(
    private readonly socketPath: string,
    runner: InpodProxyRunner,
    private readonly log: Logger,
    private readonly options: ZdsClientOptions = {},
  ) {
    super();
    this.state = new WorkloadProxyManagerState(runner, log, options.metrics);
  }

  /** Starts connecting (and reconnecting) to the node agent. */
  start(): void {
    this.connect();
  }

  /**
   * Ready (ztunnel's `/healthz/ready` waits for it) once connected, the node agent's snapshot has arrived, and no
   * pod's proxy waits for a retry.
   */
  get ready(): boolean {
    return this.connection !== undefined && this.state.ready();
  }

  /** The pods whose proxy failed to start and is retried; readiness waits for them. */
  pending(): string[] {
    return this.state.pendingUids();
  }

  /** The pods with a running proxy. */
  running(): string[] {
    return this.state.runningUids();
  }

  /** Disconnects for good and stops every pod's proxy (one still starting is stopped once it started). */
  close(): void {
    this.closed = true;
    this.halt();
    this.state.stopAll();
  }

  private halt(): void {
    this.stopped = true;
    clearTimeout(this.connectTimer);
    if (this.connection !== undefined) this.drop(this.connection);
  }

  /**
   * Closes `conn` now: datagrams of the same read batch still queued behind the current one see it closed and are
   * not acted on ('close' and onClose come a tick later).
   */
  private drop(conn: Connection): void {
    conn.closed = true;
    conn.socket.close();
  }

  private connect(): void {
    this.connectTimer = undefined;
    if (this.stopped) return;
    let socket: SeqpacketSocket;
    try {
      socket = SeqpacketSocket.connect(this.socketPath);
    } catch (e) {
      this.reconnectLater(
        { code: 'ZDS_ERR_NO_NODE_AGENT', path: this.socketPath, err: describeError(e) },
        "cannot reach the node agent's ZDS socket; is the node agent running?",
      );
      return;
    }
    this.log.info({ path: this.socketPath }, 'connected to the node agent');
    const conn: Connection = { socket, work: Promise.resolve(), retryTimer: undefined, closed: false };
    this.connection = conn;
    this.state.resetSnapshot();
    socket.on('message', (data, fds) => this.enqueue(conn, () => this.onMessage(conn, data, fds)));
    socket.on('error', (e) => this.log.warn({ err: describeError(e) }, 'node agent connection failed'));
    socket.on('close', () => this.onClose(conn));
    sendDatagram(socket, encodeHello(), [], 'ZDS_ERR_NO_NODE_AGENT').catch((e: unknown) => {
      this.log.error({ err: describeError(e) }, 'could not announce to node agent');
      this.drop(conn);
    });
  }

  private reconnectLater(fields: Record<string, unknown>, why: string): void {
    if (this.stopped) return;
    const delay = this.backoff.next();
    this.log.warn({ ...fields, retryMs: delay }, why);
    this.connectTimer = setTimeout(() => this.connect(), delay);
  }

  private onClose(conn: Connection): void {
    conn.closed = true;
    clearTimeout(conn.retryTimer);
    if (this.connection === conn) this.connection = undefined;
    this.checkReady();
    this.reconnectLater({}, 'node agent connection ended; connecting again');
  }

  /** Runs `task` after everything queued on `conn`; a failure (a bug) is logged and drops the connection. */
  private enqueue(conn: Connection, task: () => Promise<void>): void {
    conn.work = conn.work
      .then(task)
      .catch((e: unknown) => {
        this.log.error({ err: describeError(e) }, 'ZDS message handling failed');
        this.drop(conn);
      })
      .then(() => {
        if (this.closed) this.state.stopAll();
      });
  }

  private async onMessage(conn: Connection, data: Buffer, fds: number[]): Promise<void> {
    if (conn.closed) {
      for (const fd of fds) closeSync(fd);
      return;
    }
    let msg: WorkloadMessage;
    try {
      msg = readWorkloadMessage(data, fds);
    } catch (e) {
      this.log.error({ err: describeError(e) }, 'undecodable ZDS message from the node agent');
      await this.reply(conn, `failure to read message : ${describeError(e)}`);
      this.drop(conn);
      return;
    }
    try {
      await this.state.processMsg(msg);
    } catch (e) {
      if (isMeshError(e, 'ZDS_ERR_PROXY_START')) {
        this.log.error(
          { uid: 'uid' in msg ? msg.uid : undefined, err: describeError(e) },
          'pod proxy did not start; it stays pending',
        );
        this.scheduleRetry(conn);
        await this.reply(conn, `failure to start proxy : ${describeError(e)}`);
        return;
      }
      const err = isMeshError(e) ? e : new MeshError('ZDS_ERR_PROTOCOL', describeError(e), { cause: e });
      this.log.error({ err: describeError(err) }, 'protocol error from the node agent, stopping in-pod mode');
      await this.reply(conn, `failure to process message : ${describeError(err)}`);
      this.halt();
      this.checkReady();
      this.emit('stopped', err);
      return;
    }
    this.checkReady();
    await this.reply(conn, '');
  }

  /** Sends an ack (`error` empty) or a nack; a connection that cannot take it is closed (and reconnected). */
  private async reply(conn: Connection, error: string): Promise<void> {
    try {
      await sendDatagram(conn.socket, encodeAck(error), [], 'ZDS_ERR_NO_NODE_AGENT');
    } catch (e) {
      this.log.warn({ err: describeError(e) }, 'could not send ack to node agent');
      this.drop(conn);
    }
  }

  private scheduleRetry(conn: Connection): void {
    if (conn.retryTimer !== undefined || conn.closed) return;
    this.log.info(
      { uids: this.state.pendingUids(), retryMs: this.options.pendingRetryMs ?? ZDS_PENDING_RETRY_MS },
      'pending pods will be tried again',
    );
    conn.retryTimer = setTimeout(
      () => this.enqueue(conn, () => this.retry(conn)),
      this.options.pendingRetryMs ?? ZDS_PENDING_RETRY_MS,
    );
  }

  private async retry(conn: Connection): Promise<void> {
    conn.retryTimer = undefined;
    if (conn.closed) return;
    await this.state.retryPending();
    if (this.state.pendingUids().length > 0) this.scheduleRetry(conn);
    else this.checkReady();
  }

  private checkReady(): void {
    const ready = this.ready;
    if (ready) this.backoff.reset();
    if (ready === this.wasReady) return;
    this.wasReady = ready;
    this.log.info({ ready }, ready ? 'in-pod mode ready: snapshot applied, no pod pending' : 'in-pod mode not ready');
    this.emit('ready', ready);
  }
}
