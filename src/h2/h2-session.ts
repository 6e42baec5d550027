import { EventEmitter } from 'node:events';
import type net from 'node:net';
import { CLIENT_PREFACE, DEFAULT_WINDOW_SIZE, H2ErrorCode, h2ErrorName, MAX_WINDOW_SIZE, SettingId } from './frame.js';
import { FrameReader, type FrameSink } from './frame-reader.js';
import {
  FrameWriter,
  goawayFrame,
  headersFrames,
  pingFrame,
  rstStreamFrame,
  SETTINGS_ACK_FRAME,
  settingsFrame,
} from './frame-writer.js';
import {
  connectionEnded,
  connectionError,
  describeCause,
  H2Error,
  peerError,
  streamError,
  userError,
} from './h2-error.js';
import { H2Stream, type StreamHost } from './h2-stream.js';
import type { HeaderBlockDecoder, HeaderBlockDecoderLimits, HeaderBlockEncoder, HeaderField } from './header-block.js';
import { parseRequestHead, parseResponseHead, parseTrailers, type RequestHead } from './message-headers.js';
import { ReceiveWindow } from './receive-window.js';
import { applySettings, INITIAL_PEER_SETTINGS, type PeerSettings } from './settings.js';

export type H2Role = 'client' | 'server';

export interface H2SessionOptions {
  readonly role: H2Role;
  /** SETTINGS_INITIAL_WINDOW_SIZE we advertise (ztunnel: HTTP2_STREAM_WINDOW_SIZE). */
  readonly streamWindowSize: number;
  /** Our connection receive window, opened by a WINDOW_UPDATE after SETTINGS (ztunnel: HTTP2_CONNECTION_WINDOW_SIZE). */
  readonly connectionWindowSize: number;
  /** SETTINGS_MAX_FRAME_SIZE we advertise and enforce (ztunnel: HTTP2_FRAME_SIZE). */
  readonly maxFrameSize: number;
  /**
   * SETTINGS_MAX_CONCURRENT_STREAMS: how many streams the peer may have open at once; more are refused. A client
   * leaves it out (as ztunnel's does): a server never opens streams, push being disabled.
   */
  readonly maxConcurrentStreams?: number;
  /** SETTINGS_MAX_HEADER_LIST_SIZE; also caps an encoded header block, which HPACK never makes larger than its list. */
  readonly maxHeaderListSize: number;
  readonly createDecoder: (limits: HeaderBlockDecoderLimits) => HeaderBlockDecoder;
  readonly encoder: HeaderBlockEncoder;
  /**
   * How long the peer has to acknowledge our SETTINGS before the connection fails with SETTINGS_TIMEOUT (RFC 9113
   * §6.5.3); DEFAULT_SETTINGS_ACK_TIMEOUT_MS unless given.
   */
  readonly settingsAckTimeoutMs?: number;
  /**
   * How long the socket may take to flush its last frames once the connection ends before it is destroyed;
   * DEFAULT_FINISH_GRACE_MS unless given.
   */
  readonly finishGraceMs?: number;
}

export interface H2SessionEvents {
  /** Server side: a peer opened a stream with a well-formed request; answer it with `stream.respond()`. */
  stream: [stream: H2Stream, head: RequestHead];
  /** The peer's SETTINGS were applied (the first time completes its preface). */
  remoteSettings: [settings: PeerSettings];
  /** The peer sent GOAWAY: no new streams; ours above `lastStreamId` were refused and may be retried elsewhere. */
  goaway: [code: number, lastStreamId: number, debug: string];
  /** The socket closed; `error` is why, when it was not a graceful close. */
  close: [error: Error | undefined];
}

/**
 * How many streams we reset are remembered, so the frames the peer sent before it saw our RST_STREAM are ignored
 * (RFC 9113 §5.1, closed) rather than answered; a peer has at most SETTINGS_MAX_CONCURRENT_STREAMS in flight, and
 * a bound keeps a long-lived connection's memory flat.
 */
const RECENTLY_RESET_LIMIT = 1024;

/** Our HEADER_TABLE_SIZE stays at RFC 7541's default: HBONE's few header fields gain nothing from a larger table. */
const DECODER_TABLE_SIZE = 4096;
/**
 * RFC 9113 §6.5.3 lets the sender of SETTINGS give up when no ACK comes "within a reasonable amount of time". The
 * ACK completes connection setup, which ztunnel bounds at 10 s (ztunnel `src/proxy.rs` CONNECTION_TIMEOUT), so a
 * peer that took the TLS handshake but never answers HTTP/2 holds the connection no longer than a dial may take.
 */
export const DEFAULT_SETTINGS_ACK_TIMEOUT_MS = 10_000;
/**
 * Once the connection ends (a connection error, or a graceful close with every stream done), the socket ends after
 * its last frames are flushed. A peer that stopped reading would hold it forever, so after this grace it is
 * destroyed: the GOAWAY and final frames are a few bytes behind what the socket already held, and a peer that
 * takes no byte of them for as long as a connection setup may take (DEFAULT_SETTINGS_ACK_TIMEOUT_MS) is not
 * reading at all.
 */
export const DEFAULT_FINISH_GRACE_MS = DEFAULT_SETTINGS_ACK_TIMEOUT_MS;
const PING_LENGTH = 8;

interface PendingPing {
  readonly opaque: Buffer;
  readonly resolve: () => void;
  readonly reject: (e: Error) => void;
}

/**
 * An HTTP/2 connection (RFC 9113) for HBONE, either role, directly on a TLS socket: the preface, SETTINGS,
 * PING, GOAWAY, RST_STREAM, flow control both ways, CONTINUATION, the stream state machine and CONNECT.
 * HBONE needs only this part of HTTP/2, so it is written here instead of running node:http2 on a JS stream
 * (docs/performance.md): DATA goes from the socket's chunks to the stream's reader as views, and from the
 * stream's writes to the socket as [frame header, payload] under cork, with no copy, promise or log per chunk.
 */
export class H2Session extends EventEmitter<H2SessionEvents> implements FrameSink, StreamHost {
  private readonly reader: FrameReader;
  private readonly writer = new FrameWriter();
  private readonly decoder: HeaderBlockDecoder;
  private readonly streams = new Map<number, H2Stream>();
  private peer: PeerSettings = INITIAL_PEER_SETTINGS;
  private connectionSendWindow = DEFAULT_WINDOW_SIZE;
  private readonly connectionReceive: ReceiveWindow;
  /** Streams with data waiting for connection-level window, in the order they ran out. */
  private connectionBlocked: H2Stream[] = [];
  /** Write callbacks held until the socket drains, so a stream's writer feels the socket's backpressure. */
  private drainWaiters: (() => void)[] = [];
  private nextLocalStreamId: number;
  private lastPeerStreamId = 0;
  private peerStreamCount = 0;
  private localStreamCount = 0;
  private prefaceLeft: number;
  /** The stream of the DATA frame being read; undefined while a frame's data is dropped. */
  private dataStream: H2Stream | undefined;
  private goawaySent = false;
  private goawayReceived = false;
  private closing = false;
  /** No more frames are written: the connection failed, drains to its end, or the socket closed. */
  private dead = false;
  private closeError: Error | undefined;
  private readonly recentlyReset = new Set<number>();
  private pings: PendingPing[] = [];
  private pingCount = 0;
  /** Armed until the peer acknowledges our SETTINGS. */
  private settingsAckTimer: NodeJS.Timeout | undefined;
  /** Armed while the socket flushes its last frames after the connection ended. */
  private finishTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly socket: net.Socket,
    private readonly options: H2SessionOptions,
  ) {
    super();
    const client = options.role === 'client';
    this.nextLocalStreamId = client ? 1 : 2;
    this.prefaceLeft = client ? 0 : CLIENT_PREFACE.length;
    this.decoder = options.createDecoder({
      maxTableSize: DECODER_TABLE_SIZE,
      maxHeaderListSize: options.maxHeaderListSize,
    });
    this.connectionReceive = new ReceiveWindow(options.connectionWindowSize);
    this.reader = new FrameReader(this, options.maxFrameSize, options.maxHeaderListSize);
    socket.on('data', (chunk: Buffer) => this.onSocketData(chunk));
    socket.on('drain', () => this.onDrain());
    socket.on('error', (e) => {
      this.closeError ??= connectionEnded(0, `HTTP/2 connection failed: ${describeCause(e)}`, e);
    });
    socket.on('close', () => this.onSocketClose());
    const settings: [number, number][] = [
      [SettingId.INITIAL_WINDOW_SIZE, options.streamWindowSize],
      [SettingId.MAX_FRAME_SIZE, options.maxFrameSize],
      [SettingId.MAX_HEADER_LIST_SIZE, options.maxHeaderListSize],
    ];
    if (client) settings.unshift([SettingId.ENABLE_PUSH, 0]);
    if (options.maxConcurrentStreams !== undefined)
      settings.unshift([SettingId.MAX_CONCURRENT_STREAMS, options.maxConcurrentStreams]);
    socket.cork();
    if (client) socket.write(CLIENT_PREFACE);
    socket.write(settingsFrame(settings));
    if (options.connectionWindowSize > DEFAULT_WINDOW_SIZE)
      socket.write(this.writer.windowUpdate(0, options.connectionWindowSize - DEFAULT_WINDOW_SIZE));
    socket.uncork();
    const ackTimeout = options.settingsAckTimeoutMs ?? DEFAULT_SETTINGS_ACK_TIMEOUT_MS;
    this.settingsAckTimer = setTimeout(() => {
      this.fail(
        connectionError(
          H2ErrorCode.SETTINGS_TIMEOUT,
          `the peer did not acknowledge our SETTINGS within ${ackTimeout} ms (RFC 9113 §6.5.3)`,
        ),
      );
    }, ackTimeout).unref();
  }

  /** The peer's settings as applied so far. */
  get remoteSettings(): PeerSettings {
    return this.peer;
  }

  /** Whether `connect()` may open a stream now: the connection is up and neither end has begun to close it. */
  get canOpenStreams(): boolean {
    return !this.dead && !this.closing && !this.goawayReceived;
  }

  /** Why the connection failed or is ending abnormally, once it is; undefined while it is healthy or closed cleanly. */
  get failure(): Error | undefined {
    return this.closeError;
  }

  /** Streams open now (not yet closed on both sides or reset). */
  get openStreams(): number {
    return this.streams.size;
  }

  /** Client side: opens a CONNECT stream to `authority` (RFC 9113 §8.5), with HBONE's extra fields. */
  connect(authority: string, fields: readonly HeaderField[] = []): H2Stream {
    const id = this.nextLocalStreamId;
    if (this.options.role !== 'client') throw userError(id, H2ErrorCode.PROTOCOL_ERROR, 'only a client opens streams');
    if (!this.canOpenStreams)
      throw userError(
        id,
        H2ErrorCode.REFUSED_STREAM,
        'the HTTP/2 connection is closing; open the stream on another connection',
      );
    if (this.localStreamCount >= this.peer.maxConcurrentStreams)
      throw userError(
        id,
        H2ErrorCode.REFUSED_STREAM,
        `the peer allows ${this.peer.maxConcurrentStreams} concurrent streams on this connection`,
      );
    if (id > MAX_WINDOW_SIZE)
      throw userError(id, H2ErrorCode.REFUSED_STREAM, 'stream ids of this connection are used up');
    const s = this.openStream(this.nextLocalStreamId);
    this.nextLocalStreamId += 2;
    this.localStreamCount++;
    this.writeHeaders(s.id, [[':method', 'CONNECT'], [':authority', authority], ...fields], false);
    s.headersSent = true;
    return s;
  }

  /** Sends a PING; resolves on its ACK (for keepalive), rejects if the connection closes first. */
  ping(): Promise<void> {
    if (this.dead) return Promise.reject(connectionEnded(0, 'the HTTP/2 connection is closed'));
    const opaque = Buffer.alloc(PING_LENGTH);
    opaque.writeUInt32BE(++this.pingCount, 4);
    return new Promise<void>((resolve, reject) => {
      this.pings.push({ opaque, resolve, reject });
      this.socket.write(pingFrame(opaque, false));
    });
  }

  /** Graceful close: GOAWAY NO_ERROR, no new streams, the socket ends once every open stream has finished. */
  close(): void {
    if (this.dead || this.closing) return;
    this.closing = true;
    this.sendGoaway(H2ErrorCode.NO_ERROR, '');
    this.maybeFinish();
  }

  /** Abrupt close: the socket is destroyed and every stream fails, its connection ended by `error` if given. */
  destroy(error?: Error): void {
    this.closeError ??= error;
    this.dead = true;
    this.socket.destroy();
  }

  // ---- StreamHost: what streams ask of the session ----

  writeData(s: H2Stream, chunk: Buffer, done: (error?: Error | null) => void): void {
    const refusal = this.sendRefusal(s);
    if (refusal !== undefined) {
      done(refusal);
      return;
    }
    s.sendQueue.push(chunk);
    s.pendingDone = done;
    this.flushStream(s);
  }

  writeDataBatch(s: H2Stream, chunks: readonly { chunk: Buffer }[], done: (error?: Error | null) => void): void {
    const refusal = this.sendRefusal(s);
    if (refusal !== undefined) {
      done(refusal);
      return;
    }
    for (const c of chunks) s.sendQueue.push(c.chunk);
    s.pendingDone = done;
    this.flushStream(s);
  }

  endData(s: H2Stream, done: (error?: Error | null) => void): void {
    const refusal = this.sendRefusal(s);
    if (refusal !== undefined) {
      done(refusal);
      return;
    }
    this.socket.write(this.writer.dataHeader(s.id, 0, true));
    s.localEnded = true;
    this.maybeCloseStream(s);
    done();
  }

  /** Why DATA cannot go out on `s` now, if it cannot: closed, already ended, or (server side) not yet answered. */
  private sendRefusal(s: H2Stream): H2Error | undefined {
    if (this.dead || s.streamClosed || s.localEnded)
      return userError(s.id, H2ErrorCode.STREAM_CLOSED, `stream ${s.id} can no longer send`);
    if (!s.headersSent)
      return userError(
        s.id,
        H2ErrorCode.PROTOCOL_ERROR,
        `stream ${s.id}: DATA before respond() would precede the response HEADERS`,
      );
    return undefined;
  }

  resumeReading(s: H2Stream): void {
    if (s.heldCredit === 0) return;
    const n = s.heldCredit;
    s.heldCredit = 0;
    this.releaseCredit(s, n);
  }

  respond(s: H2Stream, status: number, fields: readonly HeaderField[], endStream: boolean): void {
    if (this.options.role !== 'server' || s.headersSent)
      throw userError(s.id, H2ErrorCode.PROTOCOL_ERROR, `stream ${s.id}: respond() is for a server, once`);
    if (this.dead || s.streamClosed) return;
    this.writeHeaders(s.id, [[':status', String(status)], ...fields], endStream);
    s.headersSent = true;
    if (endStream) {
      s.localEnded = true;
      this.maybeCloseStream(s);
    }
  }

  destroyed(s: H2Stream, error: Error | null): void {
    if (!s.streamClosed) {
      s.resetCode ??=
        error instanceof H2Error && error.origin === 'library' && error.streamId === s.id && error.code !== undefined
          ? error.code
          : H2ErrorCode.CANCEL;
      this.sendRstStream(s.id, s.resetCode);
      this.closeStream(s);
    }
    // Data the reader never took is gone with the stream: its connection credit comes back.
    if (s.heldCredit > 0) {
      const n = s.heldCredit;
      s.heldCredit = 0;
      this.releaseConnectionCredit(n);
    }
    // A write still waiting for window will never be sent: it completes now, as a destroyed socket's pending write does
    // (without an error: the stream's own destroy reports why), and its chunks are not held until the window reopens.
    const done = s.pendingDone;
    if (done !== undefined) {
      s.sendQueue.length = 0;
      s.pendingOffset = 0;
      s.pendingDone = undefined;
      const queued = this.connectionBlocked.indexOf(s);
      if (queued >= 0) this.connectionBlocked.splice(queued, 1);
      done();
    }
  }

  // ---- FrameSink: frames from the peer ----

  onDataStart(id: number, frameLength: number, dataLength: number): boolean {
    if (!this.connectionReceive.receive(frameLength))
      throw connectionError(
        H2ErrorCode.FLOW_CONTROL_ERROR,
        `a ${frameLength}-byte DATA frame exceeds the connection window`,
      );
    const s = this.streams.get(id);
    if (s === undefined || s.remoteEnded) {
      if (s === undefined && this.isIdle(id))
        throw connectionError(H2ErrorCode.PROTOCOL_ERROR, `DATA on stream ${id}, which was never opened`);
      this.releaseConnectionCredit(frameLength);
      if (s !== undefined || !this.recentlyReset.has(id))
        this.resetStream(streamError(id, H2ErrorCode.STREAM_CLOSED, 'DATA after the stream ended (RFC 9113 §5.1)'));
      this.dataStream = undefined;
      return false;
    }
    if (!s.receiveWindow.receive(frameLength))
      throw connectionError(
        H2ErrorCode.FLOW_CONTROL_ERROR,
        `a ${frameLength}-byte DATA frame exceeds stream ${id}'s window`,
      );
    this.dataStream = s;
    if (frameLength > dataLength) this.releaseCredit(s, frameLength - dataLength);
    return true;
  }

  onData(_id: number, data: Buffer): void {
    const s = this.dataStream!;
    if (s.destroyed) this.releaseConnectionCredit(data.length);
    else if (s.push(data) && s.heldCredit === 0) this.releaseCredit(s, data.length);
    else s.heldCredit += data.length;
  }

  onDataEnd(_id: number, endStream: boolean): void {
    const s = this.dataStream;
    this.dataStream = undefined;
    if (s !== undefined && endStream && !s.destroyed) this.onRemoteEnd(s);
  }

  onHeaders(id: number, block: Buffer, endStream: boolean): void {
    let fields: HeaderField[];
    try {
      fields = this.decoder.decode(block);
    } catch (e) {
      throw e instanceof H2Error && e.code === H2ErrorCode.COMPRESSION_ERROR
        ? e
        : connectionError(H2ErrorCode.COMPRESSION_ERROR, describeCause(e));
    }
    try {
      this.handleHeaders(id, fields, endStream);
    } catch (e) {
      if (!(e instanceof H2Error) || e.origin !== 'library' || e.streamId === 0) throw e;
      this.resetStream(e);
    }
  }

  onRstStream(id: number, code: number): void {
    const s = this.streams.get(id);
    if (s === undefined) {
      if (this.isIdle(id))
        throw connectionError(H2ErrorCode.PROTOCOL_ERROR, `RST_STREAM on stream ${id}, which was never opened`);
      return;
    }
    this.closeStream(s);
    s.resetCode = code;
    // NO_ERROR and CANCEL are the peer choosing to stop (§8.1, its app went away), not a failure of the stream.
    if (code === H2ErrorCode.NO_ERROR || code === H2ErrorCode.CANCEL) s.destroy();
    else s.destroy(peerError(id, code, `the peer reset stream ${id}`));
  }

  onSettings(payload: Buffer): void {
    const old = this.peer;
    this.peer = applySettings(old, payload, this.options.role === 'client');
    const delta = this.peer.initialWindowSize - old.initialWindowSize;
    if (delta !== 0) {
      // §6.9.2: a new initial window moves every open stream's send window by the difference.
      for (const s of this.streams.values()) {
        s.sendWindow += delta;
        if (s.sendWindow > MAX_WINDOW_SIZE)
          throw connectionError(
            H2ErrorCode.FLOW_CONTROL_ERROR,
            `SETTINGS_INITIAL_WINDOW_SIZE pushes stream ${s.id}'s window past 2^31-1`,
          );
      }
    }
    if (this.peer.headerTableSize !== old.headerTableSize)
      this.options.encoder.setPeerMaxTableSize(this.peer.headerTableSize);
    this.socket.write(SETTINGS_ACK_FRAME);
    this.emit('remoteSettings', this.peer);
    if (delta > 0)
      for (const s of this.streams.values())
        if (s.pendingDone !== undefined && !s.queuedForConnectionWindow) this.flushStream(s);
  }

  onSettingsAck(): void {
    // Our settings hold from the start (every limit we advertise is at least the default a peer assumes until it sees
    // them), so the ACK only shows the peer speaks HTTP/2: we send SETTINGS once, so the first ACK is the one awaited.
    clearTimeout(this.settingsAckTimer);
    this.settingsAckTimer = undefined;
  }

  onPing(opaque: Buffer, ack: boolean): void {
    if (!ack) {
      this.socket.write(pingFrame(opaque, true));
      return;
    }
    const i = this.pings.findIndex((p) => p.opaque.equals(opaque));
    if (i >= 0) this.pings.splice(i, 1)[0]!.resolve();
  }

  onGoaway(lastStreamId: number, code: number, debug: Buffer): void {
    this.goawayReceived = true;
    for (const s of [...this.streams.values()]) {
      if (this.isPeerId(s.id) || s.id <= lastStreamId) continue;
      // §6.8: streams above last-stream-id were not processed, so they may be retried on another connection.
      this.closeStream(s);
      s.destroy(
        peerError(
          s.id,
          H2ErrorCode.REFUSED_STREAM,
          `the peer's GOAWAY (${h2ErrorName(code)}) did not process stream ${s.id}`,
        ),
      );
    }
    this.emit('goaway', code, lastStreamId, debug.toString('utf8'));
    if (code === H2ErrorCode.NO_ERROR) {
      this.maybeFinish();
      return;
    }
    // A GOAWAY with an error code reports a connection error (§5.4.1): its sender is bound to close the connection,
    // so the streams it left open cannot finish. They fail now instead of waiting for that close.
    this.closeError ??= peerError(0, code, `the peer ended the connection: ${debug.toString('utf8')}`);
    this.dead = true;
    this.socket.destroy();
  }

  onWindowUpdate(id: number, increment: number): void {
    if (id === 0) {
      this.connectionSendWindow += increment;
      if (this.connectionSendWindow > MAX_WINDOW_SIZE)
        throw connectionError(H2ErrorCode.FLOW_CONTROL_ERROR, 'WINDOW_UPDATE pushes the connection window past 2^31-1');
      const blocked = this.connectionBlocked;
      this.connectionBlocked = [];
      for (const s of blocked) {
        s.queuedForConnectionWindow = false;
        if (s.pendingDone !== undefined && !s.streamClosed) this.flushStream(s);
      }
      return;
    }
    const s = this.streams.get(id);
    if (s === undefined) {
      if (this.isIdle(id))
        throw connectionError(H2ErrorCode.PROTOCOL_ERROR, `WINDOW_UPDATE on stream ${id}, which was never opened`);
      return;
    }
    s.sendWindow += increment;
    if (s.sendWindow > MAX_WINDOW_SIZE)
      this.resetStream(
        streamError(id, H2ErrorCode.FLOW_CONTROL_ERROR, 'WINDOW_UPDATE pushes the stream window past 2^31-1'),
      );
    else if (s.pendingDone !== undefined && !s.queuedForConnectionWindow) this.flushStream(s);
  }

  onStreamError(error: H2Error): void {
    this.resetStream(error);
  }

  // ---- internals ----

  private onSocketData(chunk: Buffer): void {
    if (this.dead) return;
    try {
      let input = chunk;
      if (this.prefaceLeft > 0) {
        const at = CLIENT_PREFACE.length - this.prefaceLeft;
        const n = Math.min(this.prefaceLeft, input.length);
        if (input.compare(CLIENT_PREFACE, at, at + n, 0, n) !== 0)
          throw connectionError(
            H2ErrorCode.PROTOCOL_ERROR,
            'the connection does not start with the HTTP/2 client preface (RFC 9113 §3.4)',
          );
        this.prefaceLeft -= n;
        input = input.subarray(n);
        if (input.length === 0) return;
      }
      this.reader.push(input);
    } catch (e) {
      this.fail(
        e instanceof H2Error && e.origin === 'library'
          ? e
          : connectionError(H2ErrorCode.INTERNAL_ERROR, describeCause(e)),
      );
    }
  }

  /** A connection error (§5.4.1): GOAWAY with its code, then the socket ends and every stream fails. */
  private fail(error: H2Error): void {
    if (this.dead) return;
    this.closeError ??= error;
    this.sendGoaway(error.code ?? H2ErrorCode.INTERNAL_ERROR, error.message);
    this.finish();
  }

  /** No more frames: the socket ends once what was written is flushed, or is destroyed after the grace if that never happens. */
  private finish(): void {
    this.dead = true;
    this.socket.destroySoon();
    if (this.socket.destroyed) return;
    const grace = this.options.finishGraceMs ?? DEFAULT_FINISH_GRACE_MS;
    this.finishTimer = setTimeout(() => {
      this.closeError ??= connectionEnded(0, `the peer did not read the connection's last frames within ${grace} ms`);
      this.socket.destroy();
    }, grace).unref();
  }

  private sendGoaway(code: number, debug: string): void {
    this.goawaySent = true;
    this.socket.write(goawayFrame(this.lastPeerStreamId, code, debug));
  }

  private maybeFinish(): void {
    if (this.dead || (!this.closing && !this.goawayReceived) || this.streams.size > 0) return;
    this.finish();
  }

  private onSocketClose(): void {
    this.dead = true;
    clearTimeout(this.settingsAckTimer);
    clearTimeout(this.finishTimer);
    const error = this.closeError ?? connectionEnded(0, 'the HTTP/2 connection closed');
    for (const s of [...this.streams.values()]) {
      this.closeStream(s);
      s.destroy(connectionEnded(s.id, `stream ${s.id} ended with its connection: ${error.message}`, error));
    }
    for (const p of this.pings.splice(0)) p.reject(error);
    this.onDrain();
    this.emit('close', this.closeError);
  }

  private onDrain(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }

  private handleHeaders(id: number, fields: HeaderField[], endStream: boolean): void {
    const s = this.streams.get(id);
    if (s !== undefined) {
      if (s.remoteEnded) throw streamError(id, H2ErrorCode.STREAM_CLOSED, 'HEADERS after END_STREAM (RFC 9113 §5.1)');
      if (this.options.role === 'client' && s.response === undefined) {
        const head = parseResponseHead(id, fields);
        if (head.status < 200) {
          if (endStream) throw streamError(id, H2ErrorCode.PROTOCOL_ERROR, 'an informational response with END_STREAM');
          return;
        }
        s.response = head;
        s.emit('response', head);
      } else {
        if (!endStream)
          throw streamError(id, H2ErrorCode.PROTOCOL_ERROR, 'trailers without END_STREAM (RFC 9113 §8.1)');
        parseTrailers(id, fields);
      }
      if (endStream) this.onRemoteEnd(s);
      return;
    }
    if (this.recentlyReset.has(id)) return;
    if (!this.isPeerId(id) || this.options.role === 'client') {
      throw connectionError(
        this.isIdle(id) ? H2ErrorCode.PROTOCOL_ERROR : H2ErrorCode.STREAM_CLOSED,
        `HEADERS on stream ${id}, which ${this.isIdle(id) ? 'this end never opened' : 'is closed'}`,
      );
    }
    if (id <= this.lastPeerStreamId)
      throw connectionError(
        H2ErrorCode.PROTOCOL_ERROR,
        `stream ${id} is not above the last opened stream ${this.lastPeerStreamId} (RFC 9113 §5.1.1)`,
      );
    this.lastPeerStreamId = id;
    if (this.goawaySent) throw streamError(id, H2ErrorCode.REFUSED_STREAM, 'the connection is closing (GOAWAY sent)');
    const limit = this.options.maxConcurrentStreams ?? Infinity;
    if (this.peerStreamCount >= limit)
      throw streamError(
        id,
        H2ErrorCode.REFUSED_STREAM,
        `${this.peerStreamCount} streams open, SETTINGS_MAX_CONCURRENT_STREAMS is ${limit}`,
      );
    const head = parseRequestHead(id, fields);
    const s2 = this.openStream(id);
    this.peerStreamCount++;
    if (endStream) this.onRemoteEnd(s2);
    this.emit('stream', s2, head);
  }

  private openStream(id: number): H2Stream {
    const s = new H2Stream(this, id, this.options.streamWindowSize, this.peer.initialWindowSize);
    this.streams.set(id, s);
    return s;
  }

  private writeHeaders(id: number, fields: readonly HeaderField[], endStream: boolean): void {
    const frames = headersFrames(id, this.options.encoder.encode(fields), endStream, this.peer.maxFrameSize);
    this.socket.cork();
    for (const f of frames) this.socket.write(f);
    this.socket.uncork();
  }

  /**
   * Sends as much of the stream's queued writes as both windows allow, as DATA frames of at most the peer's frame
   * size, all under one cork: whatever a loop turn queued leaves in one TLS write.
   */
  private flushStream(s: H2Stream): void {
    if (this.dead) return;
    const queue = s.sendQueue;
    let corked = false;
    while (queue.length > 0) {
      const chunk = queue[0]!;
      const length = chunk.length;
      let off = s.pendingOffset;
      while (off < length) {
        const n = Math.min(length - off, s.sendWindow, this.connectionSendWindow, this.peer.maxFrameSize);
        if (n <= 0) break;
        if (!corked) {
          this.socket.cork();
          corked = true;
        }
        this.socket.write(this.writer.dataHeader(s.id, n, false));
        this.socket.write(n === length ? chunk : chunk.subarray(off, off + n));
        off += n;
        s.sendWindow -= n;
        this.connectionSendWindow -= n;
      }
      if (off < length) {
        s.pendingOffset = off;
        break;
      }
      queue.shift();
      s.pendingOffset = 0;
    }
    if (corked) this.socket.uncork();
    if (queue.length > 0) {
      if (s.sendWindow > 0 && !s.queuedForConnectionWindow) {
        s.queuedForConnectionWindow = true;
        this.connectionBlocked.push(s);
      }
      return;
    }
    const done = s.pendingDone!;
    s.pendingDone = undefined;
    if (this.socket.writableNeedDrain) this.drainWaiters.push(done);
    else done();
  }

  private releaseCredit(s: H2Stream, n: number): void {
    const streamIncrement = s.remoteEnded ? 0 : s.receiveWindow.release(n);
    const connectionIncrement = this.connectionReceive.release(n);
    if (this.dead || (streamIncrement === 0 && connectionIncrement === 0)) return;
    this.socket.cork();
    if (streamIncrement > 0) this.socket.write(this.writer.windowUpdate(s.id, streamIncrement));
    if (connectionIncrement > 0) this.socket.write(this.writer.windowUpdate(0, connectionIncrement));
    this.socket.uncork();
  }

  private releaseConnectionCredit(n: number): void {
    const increment = this.connectionReceive.release(n);
    if (increment > 0 && !this.dead) this.socket.write(this.writer.windowUpdate(0, increment));
  }

  private onRemoteEnd(s: H2Stream): void {
    s.remoteEnded = true;
    s.push(null);
    this.maybeCloseStream(s);
  }

  private maybeCloseStream(s: H2Stream): void {
    if (s.localEnded && s.remoteEnded) this.closeStream(s);
  }

  private closeStream(s: H2Stream): void {
    if (s.streamClosed) return;
    s.streamClosed = true;
    this.streams.delete(s.id);
    if (this.isPeerId(s.id)) this.peerStreamCount--;
    else this.localStreamCount--;
    this.maybeFinish();
  }

  /** A stream error (§5.4.2): RST_STREAM with its code; the stream, if open, fails with it. */
  private resetStream(error: H2Error): void {
    const code = error.code ?? H2ErrorCode.INTERNAL_ERROR;
    this.sendRstStream(error.streamId, code);
    const s = this.streams.get(error.streamId);
    if (s === undefined) return;
    s.resetCode = code;
    this.closeStream(s);
    s.destroy(error);
  }

  private sendRstStream(id: number, code: number): void {
    if (this.dead) return;
    this.socket.write(rstStreamFrame(id, code));
    this.recentlyReset.add(id);
    if (this.recentlyReset.size > RECENTLY_RESET_LIMIT)
      this.recentlyReset.delete(this.recentlyReset.values().next().value!);
  }

  private isPeerId(id: number): boolean {
    return (id % 2 === 1) === (this.options.role === 'server');
  }

  /** §5.1: a stream is idle until its initiator opens it, i.e. above the highest id that side has used. */
  private isIdle(id: number): boolean {
    return this.isPeerId(id) ? id > this.lastPeerStreamId : id >= this.nextLocalStreamId;
  }
}
