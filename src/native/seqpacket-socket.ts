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
import { performance } from 'node:perf_hooks';
import { Backoff } from '../lib/backoff.js';
import { seqpacket, type FdWatcher } from './native.js';

/**
 * accept(2) errors that say nothing about the listening socket (accept(2) ERRORS): the process or system is out of
 * fds or memory, or a peer left before it was taken. The listener stays good; accepting resumes after a pause.
 */
const TRANSIENT_ACCEPT_ERRORS: ReadonlySet<string> = new Set([
  'EMFILE',
  'ENFILE',
  'ENOBUFS',
  'ENOMEM',
  'ECONNABORTED',
  'EPROTO',
  'EPERM',
  'EINTR',
]);
/** The pause after a transient accept error, doubled while they go on: long enough for fds to be freed, short enough that a peer waiting in the backlog is not given up on. */
const ACCEPT_RETRY_INITIAL_MS = 50;
const ACCEPT_RETRY_MAX_MS = 5_000;

/** Watches `fd` for reading; if that fails, closes it, so a socket that never got its object does not leak. */
function watchOrClose(
  fd: number,
  onEvent: (err: Error | null, readable: boolean, writable: boolean) => void,
): FdWatcher {
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
 * send() that returned false may be retried; 'error' (err) when the connection failed (by the socket's own error,
 * e.g. ECONNRESET when the peer closed with our datagrams unread), then 'close'; 'close'
 * when either side closed it.
 */
export class SeqpacketSocket extends EventEmitter<{
  message: [Buffer, number[]];
  drain: [];
  error: [Error];
  close: [];
}> {
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

/** How a SeqpacketServer takes connections. */
export interface SeqpacketServerOptions {
  /** Listen backlog; default 511, Node's. */
  readonly backlog?: number;
  /** At most this many accepts per second (one every 1/n s); default unlimited. */
  readonly acceptsPerSecond?: number;
}

/**
 * A SEQPACKET listener bound at a filesystem path. Events: 'connection' (socket); 'acceptError' (err, retryMs) when
 * an accept failed for a reason that leaves the listener good (out of fds, a peer that left): it pauses for
 * `retryMs` and goes on; 'error' (err) when the listener itself failed, and the server is closed; 'close'. A
 * connection that no listener takes is closed.
 */
export class SeqpacketServer extends EventEmitter<{
  connection: [SeqpacketSocket];
  acceptError: [Error, number];
  error: [Error];
  close: [];
}> {
  private readonly watcher: FdWatcher;
  private closed = false;
  private readonly retry = new Backoff(ACCEPT_RETRY_INITIAL_MS, ACCEPT_RETRY_MAX_MS);
  private readonly acceptIntervalMs: number;
  private lastAccept = -Infinity;
  /** Set while accepting is paused (rate limit or retry). */
  private resumeTimer: NodeJS.Timeout | undefined;

  /** Listens at `path`; EADDRINUSE when the path exists (a stale socket file is the caller's to remove). */
  static listen(path: string, options: SeqpacketServerOptions = {}): SeqpacketServer {
    return new SeqpacketServer(path, seqpacket.listen(path, options.backlog ?? 511), options);
  }

  private constructor(
    readonly path: string,
    private readonly fd: number,
    options: SeqpacketServerOptions,
  ) {
    super();
    this.acceptIntervalMs = options.acceptsPerSecond === undefined ? 0 : 1000 / options.acceptsPerSecond;
    this.watcher = watchOrClose(fd, (err) => {
      if (err !== null) this.fail(err);
      else this.acceptAll();
    });
  }

  /** Stops listening and removes the socket file; open connections stay open. Safe to call more than once. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.resumeTimer);
    this.watcher.close();
    closeSync(this.fd);
    rmSync(this.path, { force: true });
    process.nextTick(() => this.emit('close'));
  }

  private acceptAll(): void {
    while (!this.closed && this.resumeTimer === undefined) {
      const wait = this.lastAccept + this.acceptIntervalMs - performance.now();
      if (wait > 0) {
        this.pause(wait);
        return;
      }
      let fd: number | null;
      try {
        fd = seqpacket.accept(this.fd);
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        if (!TRANSIENT_ACCEPT_ERRORS.has(err.code ?? '')) {
          this.fail(err);
          return;
        }
        const retryMs = this.retry.next();
        this.pause(retryMs);
        this.emit('acceptError', err, retryMs);
        return;
      }
      if (fd === null) return;
      this.lastAccept = performance.now();
      this.retry.reset();
      const socket = new SeqpacketSocket(fd);
      if (!this.emit('connection', socket)) socket.close();
    }
  }

  /** Stops watching the listener for `ms`, then accepts again. */
  private pause(ms: number): void {
    this.watcher.watch(false, false);
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = undefined;
      if (this.closed) return;
      this.watcher.watch(true, false);
      this.acceptAll();
    }, ms);
  }

  private fail(err: Error): void {
    if (this.closed) return;
    this.close();
    this.emit('error', err);
  }
}
