import { closeSync, openSync } from 'node:fs';
import { describeError, MeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { SeqpacketSocket } from '../../native/seqpacket-socket.js';
import { sendDatagram } from '../../zds/send-datagram.js';
import {
  decodeAck,
  decodeHello,
  encodeWorkloadRequest,
  ZdsVersion,
  type WorkloadRequest,
} from '../../zds/zds-codec.js';
import type { SnapshotPod } from './ztunnel-link.js';

/** How long ztunnel has to say hello, and to ack each request (Istio's `readWriteDeadline`). */
export const ZDS_READ_WRITE_DEADLINE_MS = 5_000;

/**
 * A new fd on what `fd` is open on (reopened through /proc/self/fd, close-on-exec), this module's to close: a
 * request that waits its turn holds its own, so a caller closing `fd` (and the number being reused for another
 * pod's netns) cannot change what ztunnel gets.
 */
export function copyFd(fd: number): number {
  try {
    return openSync(`/proc/self/fd/${fd}`, 'r');
  } catch (e) {
    throw new MeshError('AGENT_ERR_POD_NETNS', `cannot copy network namespace fd ${fd}: ${describeError(e)}`, {
      cause: e,
    });
  }
}

/**
 * One ztunnel connected to the node agent (Istio `cni/pkg/nodeagent/ztunnelserver_linux.go`). ZDS acks carry no
 * id: an ack answers the one request in flight, so requests go one at a time, in order, through `send`, each
 * after the hello and the snapshot.
 *
 * ztunnel speaks only when spoken to: a datagram while nothing is in flight is a protocol error and closes the
 * connection, as does a missing ack (a late one would answer the wrong request); ztunnel then reconnects and gets
 * a fresh snapshot. Node delivers the peer's end and stray datagrams as events, so Istio's 5 s keepalive read is
 * not needed to notice them.
 */
export class ZtunnelConnection {
  /** True once ztunnel acked `SnapshotSent`. */
  snapshotAcked = false;
  closed = false;
  private waiter: { resolve: (data: Buffer) => void; reject: (e: Error) => void } | undefined;
  private tail: Promise<unknown>;

  constructor(
    readonly id: number,
    private readonly socket: SeqpacketSocket,
    private readonly log: Logger,
    snapshot: () => SnapshotPod[] | Promise<SnapshotPod[]>,
    onSnapshotAcked: () => void,
    private readonly deadlineMs = ZDS_READ_WRITE_DEADLINE_MS,
  ) {
    socket.on('message', (data, fds) => {
      for (const fd of fds) closeSync(fd);
      const waiter = this.waiter;
      if (waiter === undefined)
        this.fail(new MeshError('ZDS_ERR_PROTOCOL', `ztunnel sent ${data.length} bytes unasked`));
      else {
        this.waiter = undefined;
        waiter.resolve(data);
      }
    });
    socket.on('error', (e) => this.log.warn({ conn: id, err: describeError(e) }, 'ztunnel connection failed'));
    socket.on('close', () => {
      this.closed = true;
      this.waiter?.reject(new MeshError('ZDS_ERR_NO_ZTUNNEL', `ztunnel connection ${id} closed before it answered`));
      this.waiter = undefined;
    });
    this.tail = this.open(snapshot).then(onSnapshotAcked, (e: unknown) => this.fail(e));
  }

  /** Sends `request` (with `netns` for an Add; it stays the caller's) once those before it are done; resolves with the ack's error ('' for an ack). */
  send(request: WorkloadRequest, netns?: number): Promise<string> {
    const done = this.tail.then(() => this.exchange(request, netns));
    this.tail = done.catch(() => undefined);
    return done;
  }

  close(): void {
    this.fail(new MeshError('ZDS_ERR_NO_ZTUNNEL', `the node agent closed ztunnel connection ${this.id}`));
  }

  /** Hello within the deadline, then the snapshot: an Add or Keep per pod, each acked, then SnapshotSent. */
  private async open(snapshot: () => SnapshotPod[] | Promise<SnapshotPod[]>): Promise<void> {
    const version = decodeHello(await this.next('ZdsHello'));
    this.log.info({ conn: this.id, version: ZdsVersion[version] }, 'ztunnel said hello; sending the snapshot');
    // The caller's fds are copied at once: it may close them while the snapshot goes out pod by pod.
    const pods: { uid: string; info: SnapshotPod['info']; netns: number | undefined }[] = [];
    for (const pod of await snapshot()) {
      try {
        pods.push({ ...pod, netns: pod.netns === undefined ? undefined : copyFd(pod.netns) });
      } catch (e) {
        this.log.error(
          { conn: this.id, uid: pod.uid, err: describeError(e) },
          'snapshot: pod left out, its netns fd is not open',
        );
      }
    }
    try {
      for (const pod of pods) {
        const request: WorkloadRequest =
          pod.netns === undefined ? { kind: 'keep', uid: pod.uid } : { kind: 'add', uid: pod.uid, info: pod.info };
        this.log.info(
          { conn: this.id, uid: pod.uid, name: pod.info.name, namespace: pod.info.namespace, kind: request.kind },
          'snapshot: sending pod to ztunnel',
        );
        const error = await this.exchange(request, pod.netns);
        if (error !== '')
          this.log.error({ conn: this.id, uid: pod.uid, ackError: error }, 'snapshot: ztunnel nacked the pod');
        if (pod.netns !== undefined) closeSync(pod.netns);
        pod.netns = undefined;
      }
    } finally {
      for (const pod of pods) if (pod.netns !== undefined) closeSync(pod.netns);
    }
    const error = await this.exchange({ kind: 'snapshotSent' });
    if (error !== '') this.log.error({ conn: this.id, ackError: error }, 'ztunnel nacked SnapshotSent');
    this.log.info({ conn: this.id }, 'ztunnel acked the whole snapshot');
    this.snapshotAcked = true;
  }

  private async exchange(request: WorkloadRequest, netns?: number): Promise<string> {
    if (this.closed) throw new MeshError('ZDS_ERR_NO_ZTUNNEL', `ztunnel connection ${this.id} is closed`);
    const reply = this.next(`the ack of ${request.kind}`);
    try {
      await sendDatagram(
        this.socket,
        encodeWorkloadRequest(request),
        netns === undefined ? [] : [netns],
        'ZDS_ERR_NO_ZTUNNEL',
      );
    } catch (e) {
      this.fail(e);
    }
    const data = await reply;
    try {
      return decodeAck(data);
    } catch (e) {
      this.fail(e);
      throw e;
    }
  }

  /** The next datagram from ztunnel, within the deadline; else the connection closes with ZDS_ERR_TIMEOUT. */
  private next(what: string): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.fail(
          new MeshError('ZDS_ERR_TIMEOUT', `ztunnel connection ${this.id}: no ${what} within ${this.deadlineMs} ms`),
        );
      }, this.deadlineMs);
      this.waiter = {
        resolve: (data) => {
          clearTimeout(timer);
          resolve(data);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
    });
  }

  /** Ends the connection for `e`: the request in flight (if any) rejects with it. */
  private fail(e: unknown): void {
    if (this.closed) return;
    this.closed = true;
    const err = e instanceof Error ? e : new Error(String(e));
    this.log.warn({ conn: this.id, err: describeError(err) }, 'closing ztunnel connection');
    this.waiter?.reject(err);
    this.waiter = undefined;
    this.socket.close();
  }
}
