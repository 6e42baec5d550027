/**
 * AF_UNIX SOCK_SEQPACKET sockets: ZDS's transport between the node agent and ztunnel, one protobuf message per
 * datagram, with a pod's netns fd riding along (SCM_RIGHTS). Node's net module cannot wrap SEQPACKET, so these
 * classes drive the addon's syscalls from a libuv poll on the fd (`native.ts`).
 *
 * fd ownership: `send()` never takes the caller's fds (the kernel puts copies in the message, and the caller
 * still closes its own); every fd a 'message' delivers is new, close-on-exec, and the listener's to close
 * (`fs.closeSync`) or hand on. When no listener takes a message its fds are closed here.
 */
import { EventEmitter } from 'node:events';
import { closeSync, rmSync } from 'node:fs';
import { seqpacket, type FdWatcher } from './native.js';

/** Watches `fd` for reading; if that fails, closes it, so a socket that never got its object does not leak. */
function watchOrClose(fd: number, onEvent: (err: Error | null, readable: boolean, writable: boolean) => void): FdWatcher {
  try {
    const watcher = seqpacket.watch(fd, onEvent);
    watcher.watch(true, false);
    return watcher;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/**
 * A connected SEQPACKET socket. Events: 'message' (data, fds), one per datagram, boundaries kept; 'drain' when a
 * send() that returned false may be retried; 'error' (err) when the connection failed, then 'close'; 'close'
 * when either side closed it.
 */
export class SeqpacketSocket extends EventEmitter<{ message: [Buffer, number[]]; drain: []; error: [Error]; close: [] }> {
  private readonly watcher: FdWatcher;
  private closed = false;

  /** Connects to a listener at `path`; fails at once (ENOENT, ECONNREFUSED, EAGAIN on a full backlog). */
  static connect(path: string): SeqpacketSocket {
    return new SeqpacketSocket(seqpacket.connect(path));
  }

  /** Takes over `fd`, a connected SEQPACKET socket: this object closes it. */
  constructor(private readonly fd: number) {
    super();
    this.watcher = watchOrClose(fd, (err, readable, writable) => {
      if (err !== null) this.fail(err);
      else {
        if (writable) this.drained();
        if (readable) this.readAll();
      }
    });
  }

  /**
   * Sends `data` (not empty: an empty datagram reads as the end) with `fds` as one datagram. Returns false when
   * the socket's buffer is full: nothing was sent, and the same call may be made again after 'drain'. Throws
   * the system error when the connection is gone (EPIPE, ECONNRESET).
   */
  send(data: Buffer, fds: readonly number[] = []): boolean {
    if (this.closed) throw Object.assign(new Error('send on a closed SeqpacketSocket'), { code: 'EBADF' });
    const sent = seqpacket.send(this.fd, data, fds);
    if (!sent) this.watcher.watch(true, true);
    return sent;
  }

  /** Closes the socket (the peer reads the end); 'close' follows. Safe to call more than once. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.watcher.close();
    closeSync(this.fd);
    process.nextTick(() => this.emit('close'));
  }

  private drained(): void {
    this.watcher.watch(true, false);
    this.emit('drain');
  }

  private readAll(): void {
    try {
      // A listener may close the socket while handling a message: stop reading then.
      while (!this.closed) {
        const got = seqpacket.recv(this.fd);
        if (got === null) return;
        if (got.data.length === 0) {
          this.close();
          return;
        }
        if (!this.emit('message', got.data, got.fds)) for (const fd of got.fds) closeSync(fd);
      }
    } catch (e) {
      this.fail(e as Error);
    }
  }

  private fail(err: Error): void {
    if (this.closed) return;
    this.close();
    this.emit('error', err);
  }
}

/**
 * A SEQPACKET listener bound at a filesystem path. Events: 'connection' (socket); 'error' (err) when accepting
 * failed, and the server is closed; 'close'. A connection that no listener takes is closed.
 */
export class SeqpacketServer extends EventEmitter<{ connection: [SeqpacketSocket]; error: [Error]; close: [] }> {
  private readonly watcher: FdWatcher;
  private closed = false;

  /** Listens at `path`; EADDRINUSE when the path exists (a stale socket file is the caller's to remove). */
  static listen(path: string, backlog = 511): SeqpacketServer {
    return new SeqpacketServer(path, seqpacket.listen(path, backlog));
  }

  private constructor(
    readonly path: string,
    private readonly fd: number,
  ) {
    super();
    this.watcher = watchOrClose(fd, (err) => {
      if (err !== null) this.fail(err);
      else this.acceptAll();
    });
  }

  /** Stops listening and removes the socket file; open connections stay open. Safe to call more than once. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.watcher.close();
    closeSync(this.fd);
    rmSync(this.path, { force: true });
    process.nextTick(() => this.emit('close'));
  }

  private acceptAll(): void {
    try {
      while (!this.closed) {
        const fd = seqpacket.accept(this.fd);
        if (fd === null) return;
        const socket = new SeqpacketSocket(fd);
        if (!this.emit('connection', socket)) socket.close();
      }
    } catch (e) {
      this.fail(e as Error);
    }
  }

  private fail(err: Error): void {
    if (this.closed) return;
    this.close();
    this.emit('error', err);
  }
}
