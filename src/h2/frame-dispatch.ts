import { H2ErrorCode } from './frame.js';
import type { FrameSink } from './frame-reader.js';
import { SETTINGS_ACK_FRAME } from './frame-writer.js';
import type { FlowControl } from './flow-control.js';
import { connectionError, describeCause, H2Error, peerError, streamError } from './h2-error.js';
import type { H2Stream } from './h2-stream.js';
import type { HeaderBlockDecoder, HeaderBlockEncoder, HeaderField } from './header-block.js';
import { parseRequestHead, parseResponseHead, parseTrailers, type RequestHead } from './message-headers.js';
import type { PingTracker } from './ping-tracker.js';
import type { SendScheduler } from './send-scheduler.js';
import { applySettings, INITIAL_PEER_SETTINGS, type PeerSettings } from './settings.js';
import type { StreamRegistry } from './stream-registry.js';
import {
  awaitsRemoteHeaders,
  dataBeforeHeaders,
  IDLE,
  isRemoteEnded,
  recvData,
  recvHeaders,
  recvReset,
} from './stream-state.js';

/** What handling the peer's frames needs of the connection around it; the session provides it. */
export interface DispatchTarget {
  readonly client: boolean;
  /** SETTINGS_MAX_CONCURRENT_STREAMS we advertise; undefined: no limit. */
  readonly maxConcurrentStreams: number | undefined;
  readonly decoder: HeaderBlockDecoder;
  readonly encoder: HeaderBlockEncoder;
  readonly registry: StreamRegistry;
  readonly flow: FlowControl;
  readonly send: SendScheduler;
  readonly pings: PingTracker;
  /** Whether this end sent GOAWAY: the peer may open no more streams. */
  goawaySent(): boolean;
  /** A stream the peer opened with `id`, registered. */
  openStream(id: number): H2Stream;
  /** The peer opened `stream` with a well-formed request. */
  accepted(stream: H2Stream, head: RequestHead): void;
  /** The stream's state moved: a closed stream leaves the registry (more calls for one stream change nothing). */
  moved(stream: H2Stream): void;
  /** A stream error (§5.4.2): RST_STREAM with its code; the stream, if open, fails with it. */
  resetStream(error: H2Error): void;
  /** The peer's settings were applied. */
  settingsApplied(settings: PeerSettings): void;
  /** The peer acknowledged our SETTINGS. */
  settingsAcknowledged(): void;
  /** The peer sent GOAWAY. */
  goaway(lastStreamId: number, code: number, debug: Buffer): void;
}

/**
 * The peer's frames, each to what handles it (RFC 9113 §6): DATA to its stream and to flow control, HEADERS through
 * HPACK to a new stream or to the state of an open one, RST_STREAM and the end of a stream to the stream's state
 * (stream-state.ts), SETTINGS to the peer's settings and the windows they move, PING to the ping tracker, GOAWAY and
 * the ACK of our SETTINGS to the session. A frame on an id with no registered stream is judged by the id: on an
 * idle one it breaks the protocol; on a closed one, DATA and HEADERS are answered with STREAM_CLOSED unless this end
 * reset that stream (what the peer had in flight is then ignored, §5.1), and other frames are ignored.
 */
export class FrameDispatch implements FrameSink {
  private peerSettings: PeerSettings = INITIAL_PEER_SETTINGS;
  /** The stream of the DATA frame being read; undefined while a frame's data is dropped. */
  private dataStream: H2Stream | undefined;

  constructor(private readonly target: DispatchTarget) {}

  /** The peer's settings as applied so far. */
  get peer(): PeerSettings {
    return this.peerSettings;
  }

  onDataStart(id: number, frameLength: number, dataLength: number): boolean {
    const { registry, flow } = this.target;
    flow.receiveOnConnection(frameLength);
    const s = registry.get(id);
    if (s === undefined || isRemoteEnded(s.state)) {
      // §5.1 idle: DATA on a stream never opened ends the connection (the transition throws it).
      if (s === undefined && registry.isIdle(id)) recvData(IDLE, id, false);
      flow.releaseConnection(frameLength);
      if (s !== undefined || !registry.wasReset(id))
        this.target.resetStream(
          streamError(id, H2ErrorCode.STREAM_CLOSED, 'DATA after the stream ended (RFC 9113 §5.1)'),
        );
      this.dataStream = undefined;
      return false;
    }
    if (awaitsRemoteHeaders(s.state)) {
      flow.releaseConnection(frameLength);
      this.target.resetStream(dataBeforeHeaders(id));
      this.dataStream = undefined;
      return false;
    }
    flow.receiveOnStream(s, frameLength);
    this.dataStream = s;
    if (frameLength > dataLength) flow.release(s, frameLength - dataLength);
    return true;
  }

  onData(_id: number, data: Buffer): void {
    const s = this.dataStream!;
    if (s.destroyed) {
      this.target.flow.releaseConnection(data.length);
      return;
    }
    s.bytesReceived += data.length;
    if (s.push(data) && s.heldCredit === 0) this.target.flow.release(s, data.length);
    else s.heldCredit += data.length;
  }

  onDataEnd(_id: number, endStream: boolean): void {
    const s = this.dataStream;
    this.dataStream = undefined;
    if (s === undefined || !endStream || s.destroyed) return;
    s.state = recvData(s.state, s.id, true);
    this.remoteEnded(s);
  }

  onHeaders(id: number, block: Buffer, endStream: boolean): void {
    let fields: HeaderField[];
    try {
      fields = this.target.decoder.decode(block);
    } catch (e) {
      throw e instanceof H2Error && e.code === H2ErrorCode.COMPRESSION_ERROR
        ? e
        : connectionError(H2ErrorCode.COMPRESSION_ERROR, describeCause(e));
    }
    try {
      this.onHeaderFields(id, fields, endStream);
    } catch (e) {
      if (!(e instanceof H2Error) || e.origin !== 'library' || e.streamId === 0) throw e;
      this.target.resetStream(e);
    }
  }

  onRstStream(id: number, code: number): void {
    const s = this.target.registry.get(id);
    if (s === undefined) {
      // §5.1 idle: a reset of a stream never opened ends the connection (the transition throws it).
      if (this.target.registry.isIdle(id)) recvReset(IDLE, id, code);
      return;
    }
    s.state = recvReset(s.state, id, code);
    this.target.moved(s);
    // NO_ERROR and CANCEL are the peer choosing to stop (§8.1, its app went away), not a failure of the stream.
    if (code === H2ErrorCode.NO_ERROR || code === H2ErrorCode.CANCEL) s.destroy();
    else s.destroy(peerError(id, code, `the peer reset stream ${id}`));
  }

  onSettings(payload: Buffer): void {
    const { registry, flow, send } = this.target;
    const old = this.peerSettings;
    const peer = applySettings(old, payload, this.target.client);
    this.peerSettings = peer;
    send.maxFrameSize = peer.maxFrameSize;
    const delta = peer.initialWindowSize - old.initialWindowSize;
    if (delta !== 0) flow.moveStreamWindows(registry.values(), delta);
    if (peer.headerTableSize !== old.headerTableSize) this.target.encoder.setPeerMaxTableSize(peer.headerTableSize);
    send.write(SETTINGS_ACK_FRAME);
    this.target.settingsApplied(peer);
    if (delta > 0) for (const s of registry.values()) send.resume(s);
  }

  onSettingsAck(): void {
    this.target.settingsAcknowledged();
  }

  onPing(opaque: Buffer, ack: boolean): void {
    this.target.pings.onPing(opaque, ack);
  }

  onGoaway(lastStreamId: number, code: number, debug: Buffer): void {
    this.target.goaway(lastStreamId, code, debug);
  }

  onWindowUpdate(id: number, increment: number): void {
    const { registry, flow } = this.target;
    if (id === 0) {
      flow.growConnectionWindow(increment);
      return;
    }
    const s = registry.get(id);
    if (s === undefined) {
      if (registry.isIdle(id))
        throw connectionError(H2ErrorCode.PROTOCOL_ERROR, `WINDOW_UPDATE on stream ${id}, which was never opened`);
      return;
    }
    const overflow = flow.growStreamWindow(s, increment);
    if (overflow !== undefined) this.target.resetStream(overflow);
  }

  onStreamError(error: H2Error): void {
    this.target.resetStream(error);
  }

  /** A decoded header block: a new stream's request, or a response or trailers on an open stream. */
  private onHeaderFields(id: number, fields: HeaderField[], endStream: boolean): void {
    const s = this.target.registry.get(id);
    if (s === undefined) {
      this.openPeerStream(id, fields, endStream);
      return;
    }
    const state = s.state;
    if (awaitsRemoteHeaders(state)) {
      const head = parseResponseHead(id, fields);
      const next = recvHeaders(state, id, endStream, head.status < 200);
      if (head.status < 200) return;
      s.state = next;
      s.emit('response', head);
    } else {
      const next = recvHeaders(state, id, endStream);
      parseTrailers(id, fields);
      s.state = next;
    }
    if (endStream) this.remoteEnded(s);
  }

  /** HEADERS on an id with no stream: a request opening one, if the id and the limits allow it. */
  private openPeerStream(id: number, fields: HeaderField[], endStream: boolean): void {
    const { registry } = this.target;
    if (registry.wasReset(id)) return;
    if (!registry.isPeerId(id) || this.target.client) {
      throw connectionError(
        registry.isIdle(id) ? H2ErrorCode.PROTOCOL_ERROR : H2ErrorCode.STREAM_CLOSED,
        `HEADERS on stream ${id}, which ${registry.isIdle(id) ? 'this end never opened' : 'is closed'}`,
      );
    }
    if (id <= registry.lastPeerStreamId)
      throw connectionError(
        H2ErrorCode.PROTOCOL_ERROR,
        `stream ${id} is not above the last opened stream ${registry.lastPeerStreamId} (RFC 9113 §5.1.1)`,
      );
    registry.notePeerId(id);
    if (this.target.goawaySent())
      throw streamError(id, H2ErrorCode.REFUSED_STREAM, 'the connection is closing (GOAWAY sent)');
    const limit = this.target.maxConcurrentStreams ?? Infinity;
    if (registry.peerOpen >= limit)
      throw streamError(
        id,
        H2ErrorCode.REFUSED_STREAM,
        `${registry.peerOpen} streams open, SETTINGS_MAX_CONCURRENT_STREAMS is ${limit}`,
      );
    const head = parseRequestHead(id, fields);
    const next = recvHeaders(IDLE, id, endStream);
    const s = this.target.openStream(id);
    s.state = next;
    if (endStream) this.remoteEnded(s);
    this.target.accepted(s, head);
  }

  /** END_STREAM arrived (the state already moved): the readable side ends. */
  private remoteEnded(s: H2Stream): void {
    s.push(null);
    this.target.moved(s);
  }
}
