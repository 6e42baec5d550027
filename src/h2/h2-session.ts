import { EventEmitter } from 'node:events';
import type net from 'node:net';
import { CLIENT_PREFACE, DEFAULT_WINDOW_SIZE, H2ErrorCode, h2ErrorName, SettingId } from './frame.js';
import { FrameDispatch } from './frame-dispatch.js';
import { FrameReader } from './frame-reader.js';
import { goawayFrame, settingsFrame } from './frame-writer.js';
import { FlowControl } from './flow-control.js';
import { connectionEnded, connectionError, describeCause, H2Error, peerError, userError } from './h2-error.js';
import { H2Stream, type StreamHost } from './h2-stream.js';
import type { HeaderBlockDecoder, HeaderBlockDecoderLimits, HeaderBlockEncoder, HeaderField } from './header-block.js';
import type { RequestHead } from './message-headers.js';
import { PingTracker } from './ping-tracker.js';
import { SendScheduler, type WriteDone } from './send-scheduler.js';
import type { PeerSettings } from './settings.js';
import { StreamRegistry } from './stream-registry.js';
import { connectionClosed, isClosed, sendEndStream, sendHeaders, sendRefusal, sendReset } from './stream-state.js';

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

/** Our HEADER_TABLE_SIZE stays at RFC 7541's default: HBONE's few header fields gain nothing from a larger table. */
const DECODER_TABLE_SIZE = 4096;
/**
 * RFC 9113 §6.5.3 lets the sender of SETTINGS give up when no ACK comes "within a reasonable amount of time". The
 * ACK completes connection setup, which ztunnel bounds at 10 s (ztunnel `src/proxy.rs` CONNECTION_TIMEOUT), so a
 * peer that took the TLS handshake but never answers HTTP/2 holds the connection no longer than a dial may take.
 */
const DEFAULT_SETTINGS_ACK_TIMEOUT_MS = 10_000;
/**
 * Once the connection ends (a connection error, or a graceful close with every stream done), the socket ends after
 * its last frames are flushed. A peer that stopped reading would hold it forever, so after this grace it is
 * destroyed: the GOAWAY and final frames are a few bytes behind what the socket already held, and a peer that
 * takes no byte of them for as long as a connection setup may take (DEFAULT_SETTINGS_ACK_TIMEOUT_MS) is not
 * reading at all.
 */
const DEFAULT_FINISH_GRACE_MS = DEFAULT_SETTINGS_ACK_TIMEOUT_MS;

/**
 * An HTTP/2 connection (RFC 9113) for HBONE, either role, directly on a TLS socket: the preface, SETTINGS,
 * PING, GOAWAY, RST_STREAM, flow control both ways, CONTINUATION, the stream state machine and CONNECT.
 * HBONE needs only this part of HTTP/2, so it is written here instead of running node:http2 on a JS stream
 * (docs/performance.md): DATA goes from the socket's chunks to the stream's reader as views, and from the
 * stream's writes to the socket as [frame header, payload] under cork, with no copy, promise or log per chunk.
 *
 * The session is the connection's life (preface, SETTINGS ACK timeout, graceful and abrupt close, the socket's end)
 * and what its streams ask of it; the rest is in its parts: FrameReader and FrameDispatch take the peer's frames,
 * SendScheduler writes ours, FlowControl keeps the windows, PingTracker the PINGs, StreamRegistry the stream ids,
 * and each stream's state moves only by the transitions of stream-state.ts.
 */
export class H2Session extends EventEmitter<H2SessionEvents> implements StreamHost {
  private readonly send: SendScheduler;
  private readonly flow: FlowControl;
  private readonly pings: PingTracker;
  private readonly registry: StreamRegistry;
  private readonly dispatch: FrameDispatch;
  private readonly reader: FrameReader;
  private prefaceLeft: number;
  private goawaySent = false;
  private goawayReceived = false;
  private closing = false;
  private closeError: Error | undefined;
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
    this.prefaceLeft = client ? 0 : CLIENT_PREFACE.length;
    this.send = new SendScheduler(socket);
    this.flow = new FlowControl(this.send, options.connectionWindowSize);
    this.pings = new PingTracker(this.send);
    this.registry = new StreamRegistry(!client);
    this.dispatch = new FrameDispatch({
      client,
      maxConcurrentStreams: options.maxConcurrentStreams,
      decoder: options.createDecoder({
        maxTableSize: DECODER_TABLE_SIZE,
        maxHeaderListSize: options.maxHeaderListSize,
      }),
      encoder: options.encoder,
      registry: this.registry,
      flow: this.flow,
      send: this.send,
      pings: this.pings,
      goawaySent: () => this.goawaySent,
      openStream: (id) => this.openStream(id),
      accepted: (stream, head) => this.emit('stream', stream, head),
      moved: (stream) => this.moved(stream),
      resetStream: (error) => this.resetStream(error),
      settingsApplied: (settings) => this.emit('remoteSettings', settings),
      settingsAcknowledged: () => this.onSettingsAck(),
      goaway: (lastStreamId, code, debug) => this.onGoaway(lastStreamId, code, debug),
    });
    this.reader = new FrameReader(this.dispatch, options.maxFrameSize, options.maxHeaderListSize);
    socket.on('data', (chunk: Buffer) => this.onSocketData(chunk));
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
    const preface = [settingsFrame(settings)];
    if (client) preface.unshift(CLIENT_PREFACE);
    if (options.connectionWindowSize > DEFAULT_WINDOW_SIZE)
      preface.push(this.send.windowUpdateFrame(options.connectionWindowSize - DEFAULT_WINDOW_SIZE));
    this.send.writeCorked(preface);
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
    return this.dispatch.peer;
  }

  /** Whether `connect()` may open a stream now: the connection is up and neither end has begun to close it. */
  get canOpenStreams(): boolean {
    return !this.send.stopped && !this.closing && !this.goawayReceived;
  }

  /** Why the connection failed or is ending abnormally, once it is; undefined while it is healthy or closed cleanly. */
  get failure(): Error | undefined {
    return this.closeError;
  }

  /** Streams open now (not yet closed on both sides or reset). */
  get openStreams(): number {
    return this.registry.size;
  }

  /** Client side: opens a CONNECT stream to `authority` (RFC 9113 §8.5), with HBONE's extra fields. */
  connect(authority: string, fields: readonly HeaderField[] = []): H2Stream {
    const peer = this.dispatch.peer;
    if (this.options.role !== 'client') throw userError(0, H2ErrorCode.PROTOCOL_ERROR, 'only a client opens streams');
    if (!this.canOpenStreams)
      throw userError(
        0,
        H2ErrorCode.REFUSED_STREAM,
        'the HTTP/2 connection is closing; open the stream on another connection',
      );
    if (this.registry.localOpen >= peer.maxConcurrentStreams)
      throw userError(
        0,
        H2ErrorCode.REFUSED_STREAM,
        `the peer allows ${peer.maxConcurrentStreams} concurrent streams on this connection`,
      );
    if (!this.registry.localIdsLeft)
      throw userError(0, H2ErrorCode.REFUSED_STREAM, 'stream ids of this connection are used up');
    const s = this.openStream(this.registry.takeLocalId());
    const next = sendHeaders(s.state, s.id, false);
    this.writeHeaders(s.id, [[':method', 'CONNECT'], [':authority', authority], ...fields], false);
    s.state = next;
    return s;
  }

  /** Sends a PING; resolves on its ACK (for keepalive), rejects if the connection closes first. */
  ping(): Promise<void> {
    if (this.send.stopped) return Promise.reject(connectionEnded(0, 'the HTTP/2 connection is closed'));
    return this.pings.ping();
  }

  /** Graceful close: GOAWAY NO_ERROR, no new streams, the socket ends once every open stream has finished. */
  close(): void {
    if (this.send.stopped || this.closing) return;
    this.closing = true;
    this.sendGoaway(H2ErrorCode.NO_ERROR, '');
    this.maybeFinish();
  }

  /** Abrupt close: the socket is destroyed and every stream fails, its connection ended by `error` if given. */
  destroy(error?: Error): void {
    this.closeError ??= error;
    this.send.stop();
    this.socket.destroy();
  }

  // ---- StreamHost: what streams ask of the session ----

  writeData(s: H2Stream, chunk: Buffer, done: WriteDone): void {
    const refusal = this.dataRefusal(s);
    if (refusal !== undefined) done(refusal);
    else this.send.enqueue(s, chunk, done);
  }

  writeDataBatch(s: H2Stream, chunks: readonly { chunk: Buffer }[], done: WriteDone): void {
    const refusal = this.dataRefusal(s);
    if (refusal !== undefined) done(refusal);
    else this.send.enqueueBatch(s, chunks, done);
  }

  endData(s: H2Stream, done: WriteDone): void {
    const refusal = this.dataRefusal(s);
    if (refusal !== undefined) {
      done(refusal);
      return;
    }
    this.send.writeEndStream(s);
    s.state = sendEndStream(s.state, s.id);
    this.moved(s);
    done();
  }

  resumeReading(s: H2Stream): void {
    this.flow.releaseHeld(s);
  }

  respond(s: H2Stream, status: number, fields: readonly HeaderField[], endStream: boolean): void {
    if (this.options.role !== 'server')
      throw userError(s.id, H2ErrorCode.PROTOCOL_ERROR, `stream ${s.id}: respond() is for a server, once`);
    // A stream the peer reset (or whose connection ended) while its answer was being prepared takes none.
    if (this.send.stopped || isClosed(s.state)) return;
    const next = sendHeaders(s.state, s.id, endStream);
    this.writeHeaders(s.id, [[':status', String(status)], ...fields], endStream);
    s.state = next;
    this.moved(s);
  }

  reset(s: H2Stream, code: number): void {
    if (isClosed(s.state)) return;
    this.sendRstStream(s.id, code);
    s.state = sendReset(s.state, code);
    this.moved(s);
  }

  destroyed(s: H2Stream): void {
    this.reset(s, H2ErrorCode.CANCEL);
    // Data the reader never took is gone with the stream: its connection credit comes back.
    this.flow.releaseHeldToConnection(s);
    this.send.cancel(s);
  }

  // ---- the connection's life ----

  /** Why DATA cannot go out on `s` now, if it cannot: the connection writes no more, or the state does not allow it. */
  private dataRefusal(s: H2Stream): Error | undefined {
    if (this.send.stopped) return userError(s.id, H2ErrorCode.STREAM_CLOSED, `stream ${s.id} can no longer send`);
    return sendRefusal(s.state, s.id);
  }

  private onSocketData(chunk: Buffer): void {
    if (this.send.stopped) return;
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

  private onSettingsAck(): void {
    // Our settings hold from the start (every limit we advertise is at least the default a peer assumes until it sees
    // them), so the ACK only shows the peer speaks HTTP/2: we send SETTINGS once, so the first ACK is the one awaited.
    clearTimeout(this.settingsAckTimer);
    this.settingsAckTimer = undefined;
  }

  private onGoaway(lastStreamId: number, code: number, debug: Buffer): void {
    this.goawayReceived = true;
    for (const s of this.registry.snapshot()) {
      if (this.registry.isPeerId(s.id) || s.id <= lastStreamId) continue;
      // §6.8: streams above last-stream-id were not processed, so they may be retried on another connection.
      const refused = peerError(
        s.id,
        H2ErrorCode.REFUSED_STREAM,
        `the peer's GOAWAY (${h2ErrorName(code)}) did not process stream ${s.id}`,
      );
      s.state = connectionClosed(s.state, refused);
      this.moved(s);
      s.destroy(refused);
    }
    this.emit('goaway', code, lastStreamId, debug.toString('utf8'));
    if (code === H2ErrorCode.NO_ERROR) {
      this.maybeFinish();
      return;
    }
    // A GOAWAY with an error code reports a connection error (§5.4.1): its sender is bound to close the connection,
    // so the streams it left open cannot finish. They fail now instead of waiting for that close.
    this.closeError ??= peerError(0, code, `the peer ended the connection: ${debug.toString('utf8')}`);
    this.send.stop();
    this.socket.destroy();
  }

  /** A connection error (§5.4.1): GOAWAY with its code, then the socket ends and every stream fails. */
  private fail(error: H2Error): void {
    if (this.send.stopped) return;
    this.closeError ??= error;
    this.sendGoaway(error.code ?? H2ErrorCode.INTERNAL_ERROR, error.message);
    this.finish();
  }

  /** No more frames: the socket ends once what was written is flushed, or is destroyed after the grace if that never happens. */
  private finish(): void {
    this.send.stop();
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
    this.send.write(goawayFrame(this.registry.lastPeerStreamId, code, debug));
  }

  private maybeFinish(): void {
    if (this.send.stopped || (!this.closing && !this.goawayReceived) || this.registry.size > 0) return;
    this.finish();
  }

  private onSocketClose(): void {
    this.send.stop();
    clearTimeout(this.settingsAckTimer);
    clearTimeout(this.finishTimer);
    const error = this.closeError ?? connectionEnded(0, 'the HTTP/2 connection closed');
    for (const s of this.registry.snapshot()) {
      const ended = connectionEnded(s.id, `stream ${s.id} ended with its connection: ${error.message}`, error);
      s.state = connectionClosed(s.state, ended);
      this.moved(s);
      s.destroy(ended);
    }
    this.pings.failAll(error);
    this.send.releaseDrainWaiters();
    this.emit('close', this.closeError);
  }

  private openStream(id: number): H2Stream {
    const s = new H2Stream(this, id, this.options.streamWindowSize, this.dispatch.peer.initialWindowSize);
    this.registry.add(s);
    return s;
  }

  private writeHeaders(id: number, fields: readonly HeaderField[], endStream: boolean): void {
    this.send.writeHeaders(id, this.options.encoder.encode(fields), endStream);
  }

  /** Bookkeeping after a stream's state moved: a closed stream leaves the registry, which may end a closing connection. */
  private moved(s: H2Stream): void {
    if (isClosed(s.state) && this.registry.remove(s)) this.maybeFinish();
  }

  /** A stream error (§5.4.2): RST_STREAM with its code; the stream, if open, fails with it. */
  private resetStream(error: H2Error): void {
    const code = error.code ?? H2ErrorCode.INTERNAL_ERROR;
    this.sendRstStream(error.streamId, code);
    const s = this.registry.get(error.streamId);
    if (s === undefined) return;
    s.state = sendReset(s.state, code);
    this.moved(s);
    s.destroy(error);
  }

  private sendRstStream(id: number, code: number): void {
    if (this.send.stopped) return;
    this.send.writeRstStream(id, code);
    this.registry.noteReset(id);
  }
}
