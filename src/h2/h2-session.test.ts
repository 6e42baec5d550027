import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { H2Session } from './h2-session.js';
import type { H2Stream } from './h2-stream.js';
import { CLIENT_PREFACE, FrameFlag, FrameType, H2ErrorCode } from './frame.js';
import { rawFrame, settingsFrame } from './frame-writer.js';
import { H2Error } from './h2-error.js';
import { RawPeer, type WireFrame } from '../../test/helpers/h2-raw-peer.js';
import { h2Options } from '../../test/helpers/h2-tls.js';
import { HpackEncoder } from './hpack/hpack-encoder.js';

const HOST = '127.0.105.6';
const WINDOW = 65_535;
/** A missing WINDOW_UPDATE shows as a frame that never comes: fail instead of waiting forever. */
const LIMIT = { timeout: 20_000 };
const CONNECT = new HpackEncoder().encode([
  [':method', 'CONNECT'],
  [':authority', '10.0.0.1:80'],
]);
const PREFACE = Buffer.concat([
  CLIENT_PREFACE,
  settingsFrame([]),
  rawFrame(FrameType.HEADERS, FrameFlag.END_HEADERS, 1, CONNECT),
]);
const increments = (frames: WireFrame[], id: number): number =>
  frames
    .filter((f) => f.type === FrameType.WINDOW_UPDATE && f.streamId === id)
    .reduce((n, f) => n + f.payload.readUInt32BE(0), 0);

/** Receive-side credit accounting of the session (RFC 9113 §6.9), over plain TCP with a raw peer. */
describe('H2Session receive credit', () => {
  let server: net.Server;
  before(async () => {
    server = net.createServer().listen(0, HOST);
    await once(server, 'listening');
  });
  after(() => server.close());

  /** Our server session (windows of 64 KiB, never opened further) and its stream 1, which the raw client opened. */
  async function openStream(): Promise<{ peer: RawPeer; stream: H2Stream }> {
    const accepted = once(server, 'connection') as Promise<[net.Socket]>;
    const socket = net.connect((server.address() as net.AddressInfo).port, HOST);
    const [serverSocket] = await accepted;
    const session = new H2Session(
      serverSocket,
      h2Options('server', { streamWindowSize: WINDOW, connectionWindowSize: WINDOW }),
    );
    const peer = new RawPeer(socket);
    const opened = once(session, 'stream') as Promise<[H2Stream]>;
    peer.send(PREFACE);
    const [stream] = await opened;
    return { peer, stream };
  }

  /** The same, answered 200 and paused: nothing is read from it. */
  async function open(): Promise<{ peer: RawPeer; stream: H2Stream }> {
    const opened = await openStream();
    opened.stream.on('error', () => undefined);
    opened.stream.respond(200);
    opened.stream.pause();
    return opened;
  }

  test('padding is credited back at once, though the reader never reads', LIMIT, async () => {
    const { peer } = await open();
    const padOnly = rawFrame(
      FrameType.DATA,
      FrameFlag.PADDED,
      1,
      Buffer.concat([Buffer.from([255]), Buffer.alloc(255)]),
    );
    peer.send(...Array.from({ length: 130 }, () => padOnly));
    await peer.frame((f) => f.type === FrameType.WINDOW_UPDATE && f.streamId === 1, 'stream WINDOW_UPDATE');
    await peer.frame((f) => f.type === FrameType.WINDOW_UPDATE && f.streamId === 0, 'connection WINDOW_UPDATE');
    assert.ok(increments(peer.frames, 1) >= WINDOW / 2);
    peer.socket.destroy();
  });

  test(
    'a stream destroyed with unread data gives its connection credit back, so other streams are not starved',
    LIMIT,
    async () => {
      const { peer, stream } = await open();
      const chunk = rawFrame(FrameType.DATA, 0, 1, Buffer.alloc(WINDOW / 5));
      peer.send(chunk, chunk, chunk, chunk, chunk, rawFrame(FrameType.PING, 0, 0, Buffer.from('barrier!')));
      await peer.frame((f) => f.type === FrameType.PING && (f.flags & FrameFlag.ACK) !== 0, 'PING ACK');
      const beforeDestroy = increments(peer.frames, 0);
      assert.ok(beforeDestroy < WINDOW, 'part of the window is held by the unread stream');
      stream.destroy();
      await peer.frame((f) => f.type === FrameType.RST_STREAM && f.streamId === 1, 'RST_STREAM');
      peer.send(rawFrame(FrameType.PING, 0, 0, Buffer.from('barrier2')));
      await peer.frame((f) => f.type === FrameType.PING && f.payload.toString() === 'barrier2', 'PING ACK');
      assert.equal(increments(peer.frames, 0), WINDOW, 'every byte received on the connection is credited back');
      peer.socket.destroy();
    },
  );

  test(
    'a server stream that ends or writes before respond() fails instead of sending DATA ahead of its HEADERS',
    LIMIT,
    async () => {
      const { peer, stream } = await openStream();
      const failed = once(stream, 'error');
      stream.end();
      const [error] = (await failed) as [Error];
      assert.ok(
        error instanceof H2Error && error.code === H2ErrorCode.PROTOCOL_ERROR && error.origin === 'user',
        String(error),
      );
      await peer.frame((f) => f.type === FrameType.RST_STREAM && f.streamId === 1, 'RST_STREAM');
      assert.equal(
        peer.frames.find((f) => f.type === FrameType.DATA || f.type === FrameType.HEADERS),
        undefined,
      );
      peer.socket.destroy();
    },
  );
});
