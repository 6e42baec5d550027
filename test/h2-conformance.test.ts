import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { H2Session, type H2SessionOptions } from '../src/h2/h2-session.js';
import type { H2Stream } from '../src/h2/h2-stream.js';
import { CLIENT_PREFACE, FrameFlag, FrameType, H2ErrorCode, SettingId } from '../src/h2/frame.js';
import { rawFrame, settingsFrame } from '../src/h2/frame-writer.js';
import type { HeaderField } from '../src/h2/header-block.js';
import { isMeshError, type ErrorCode } from '../src/lib/errors.js';
import { meshErrorFromH2 } from '../src/ztunnel/proxy/mesh-error-from-h2.js';
import { connectHboneTls, h2Options, useHboneTls } from './helpers/h2-tls.js';
import { RawPeer, type WireFrame } from './helpers/h2-raw-peer.js';
import { HpackEncoder } from '../src/h2/hpack/hpack-encoder.js';

const HOST = '127.106.0.2';
/** A conformance failure often shows as a frame that never comes: fail the test instead of waiting forever. */
const LIMIT = { timeout: 20_000 };
/** The server under test: small limits, so each bad frame is cheap to build. */
const SERVER: Partial<H2SessionOptions> = {
  maxFrameSize: 16_384,
  streamWindowSize: 65_535,
  connectionWindowSize: 1 << 20,
  maxHeaderListSize: 4096,
  maxConcurrentStreams: 2,
};

const u32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v);
  return b;
};
const block = (fields: HeaderField[]): Buffer => new HpackEncoder().encode(fields);
const CONNECT = block([
  [':method', 'CONNECT'],
  [':authority', '10.0.0.1:80'],
]);
const headers = (id: number, b: Buffer = CONNECT, flags: number = FrameFlag.END_HEADERS): Buffer =>
  rawFrame(FrameType.HEADERS, flags, id, b);
const data = (id: number, payload: Buffer | string, flags = 0): Buffer =>
  rawFrame(FrameType.DATA, flags, id, Buffer.from(payload));
const ping = (text: string, flags = 0): Buffer => rawFrame(FrameType.PING, flags, 0, Buffer.from(text));
const windowUpdate = (id: number, inc: number): Buffer => rawFrame(FrameType.WINDOW_UPDATE, 0, id, u32(inc));
const settings = (...s: [number, number][]): Buffer => settingsFrame(s);
const PREFACE = Buffer.concat([CLIENT_PREFACE, settings()]);
const isAck =
  (text: string) =>
  (f: WireFrame): boolean =>
    f.type === FrameType.PING && (f.flags & FrameFlag.ACK) !== 0 && f.payload.toString() === text;

describe('HTTP/2 conformance of our session (RFC 9113 §5.4, §6): a raw peer over TLS sends the bad frame', () => {
  const ctx = useHboneTls(HOST);

  /**
   * A raw client connected to our server session, which answers each CONNECT with 200 and echoes its bytes; with
   * `hold` it never reads them (so no receive credit returns), with `reset` it destroys the stream at once.
   */
  async function openServer(
    overrides: Partial<H2SessionOptions> = {},
    mode: 'echo' | 'hold' | 'reset' = 'echo',
  ): Promise<{ peer: RawPeer; session: H2Session }> {
    const accepted = ctx.server.accepted();
    const socket = await connectHboneTls(ctx.fx, HOST, ctx.server.port);
    const session = new H2Session(await accepted, h2Options('server', { ...SERVER, ...overrides }));
    session.on('stream', (s: H2Stream) => {
      s.on('error', () => undefined);
      s.respond(200);
      if (mode === 'hold') s.pause();
      else if (mode === 'reset') s.destroy();
      else s.pipe(s);
    });
    return { peer: new RawPeer(socket), session };
  }

  async function connectionError(
    bytes: Buffer[],
    overrides: Partial<H2SessionOptions> = {},
    preface = PREFACE,
  ): Promise<{ code: number; lastStreamId: number; error: ErrorCode | undefined }> {
    const { peer, session } = await openServer(overrides, 'hold');
    const closed = once(session, 'close');
    peer.send(preface, ...bytes);
    const goaway = await peer.frame((f) => f.type === FrameType.GOAWAY, 'GOAWAY');
    const [error] = (await closed) as [Error | undefined];
    await peer.closed();
    const reported = meshErrorFromH2(error);
    return {
      code: goaway.payload.readUInt32BE(4),
      lastStreamId: goaway.payload.readUInt32BE(0),
      error: isMeshError(reported) ? reported.code : undefined,
    };
  }

  async function streamError(
    bytes: Buffer[],
    streamId: number,
    overrides: Partial<H2SessionOptions> = {},
  ): Promise<number> {
    const { peer } = await openServer(overrides);
    peer.send(PREFACE, ...bytes);
    const rst = await peer.frame(
      (f) => f.type === FrameType.RST_STREAM && f.streamId === streamId,
      `RST_STREAM on ${streamId}`,
    );
    peer.send(ping('still up'));
    await peer.frame(isAck('still up'), 'the PING ACK that shows the connection survived');
    assert.equal(
      peer.frames.find((f) => f.type === FrameType.GOAWAY),
      undefined,
    );
    peer.socket.destroy();
    return rst.payload.readUInt32BE(0);
  }

  const CONNECTION_ERRORS: [string, Buffer[], number, ErrorCode][] = [
    ['DATA on stream 0', [data(0, 'x')], H2ErrorCode.PROTOCOL_ERROR, 'H2_ERR_PROTOCOL'],
    [
      'a frame larger than our SETTINGS_MAX_FRAME_SIZE',
      [headers(1), data(1, Buffer.alloc(16_385))],
      H2ErrorCode.FRAME_SIZE_ERROR,
      'H2_ERR_FRAME_SIZE',
    ],
    [
      'PING of 7 bytes',
      [rawFrame(FrameType.PING, 0, 0, Buffer.alloc(7))],
      H2ErrorCode.FRAME_SIZE_ERROR,
      'H2_ERR_FRAME_SIZE',
    ],
    [
      'PING on a stream',
      [rawFrame(FrameType.PING, 0, 1, Buffer.alloc(8))],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    [
      'SETTINGS of 5 bytes',
      [rawFrame(FrameType.SETTINGS, 0, 0, Buffer.alloc(5))],
      H2ErrorCode.FRAME_SIZE_ERROR,
      'H2_ERR_FRAME_SIZE',
    ],
    [
      'SETTINGS ACK with a payload',
      [rawFrame(FrameType.SETTINGS, FrameFlag.ACK, 0, Buffer.alloc(6))],
      H2ErrorCode.FRAME_SIZE_ERROR,
      'H2_ERR_FRAME_SIZE',
    ],
    [
      'SETTINGS on a stream',
      [rawFrame(FrameType.SETTINGS, 0, 1, Buffer.alloc(0))],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    [
      'SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1',
      [settings([SettingId.INITIAL_WINDOW_SIZE, 2 ** 31])],
      H2ErrorCode.FLOW_CONTROL_ERROR,
      'H2_ERR_FLOW_CONTROL',
    ],
    [
      'SETTINGS_MAX_FRAME_SIZE below 16384',
      [settings([SettingId.MAX_FRAME_SIZE, 100])],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    ['SETTINGS_ENABLE_PUSH 2', [settings([SettingId.ENABLE_PUSH, 2])], H2ErrorCode.PROTOCOL_ERROR, 'H2_ERR_PROTOCOL'],
    ['WINDOW_UPDATE of 0 on the connection', [windowUpdate(0, 0)], H2ErrorCode.PROTOCOL_ERROR, 'H2_ERR_PROTOCOL'],
    [
      'WINDOW_UPDATE past 2^31-1 on the connection',
      [windowUpdate(0, 2 ** 31 - 1)],
      H2ErrorCode.FLOW_CONTROL_ERROR,
      'H2_ERR_FLOW_CONTROL',
    ],
    [
      'WINDOW_UPDATE of 3 bytes',
      [rawFrame(FrameType.WINDOW_UPDATE, 0, 0, Buffer.alloc(3))],
      H2ErrorCode.FRAME_SIZE_ERROR,
      'H2_ERR_FRAME_SIZE',
    ],
    ['WINDOW_UPDATE on a stream never opened', [windowUpdate(7, 1)], H2ErrorCode.PROTOCOL_ERROR, 'H2_ERR_PROTOCOL'],
    [
      'SETTINGS_INITIAL_WINDOW_SIZE pushing an open stream window past 2^31-1 (§6.9.2)',
      [headers(1), windowUpdate(1, 2 ** 31 - 1 - 65_535), settings([SettingId.INITIAL_WINDOW_SIZE, 65_536])],
      H2ErrorCode.FLOW_CONTROL_ERROR,
      'H2_ERR_FLOW_CONTROL',
    ],
    [
      'RST_STREAM on stream 0',
      [rawFrame(FrameType.RST_STREAM, 0, 0, u32(8))],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    [
      'RST_STREAM of 3 bytes',
      [headers(1), rawFrame(FrameType.RST_STREAM, 0, 1, Buffer.alloc(3))],
      H2ErrorCode.FRAME_SIZE_ERROR,
      'H2_ERR_FRAME_SIZE',
    ],
    [
      'RST_STREAM on a stream never opened',
      [rawFrame(FrameType.RST_STREAM, 0, 5, u32(8))],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    [
      'PRIORITY on stream 0',
      [rawFrame(FrameType.PRIORITY, 0, 0, Buffer.alloc(5))],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    [
      'GOAWAY of 4 bytes',
      [rawFrame(FrameType.GOAWAY, 0, 0, Buffer.alloc(4))],
      H2ErrorCode.FRAME_SIZE_ERROR,
      'H2_ERR_FRAME_SIZE',
    ],
    [
      'PUSH_PROMISE from a client',
      [rawFrame(FrameType.PUSH_PROMISE, FrameFlag.END_HEADERS, 1, u32(2))],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    [
      'a PING between HEADERS and its CONTINUATION',
      [headers(1, CONNECT, 0), ping('12345678')],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    [
      'DATA of the same stream between HEADERS and its CONTINUATION',
      [headers(1, CONNECT, 0), data(1, 'x')],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    [
      'HEADERS of another stream between HEADERS and its CONTINUATION',
      [headers(1, CONNECT, 0), headers(3)],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    [
      'a CONTINUATION of another stream after HEADERS',
      [headers(1, CONNECT, 0), rawFrame(FrameType.CONTINUATION, FrameFlag.END_HEADERS, 3, CONNECT)],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    [
      'CONTINUATION with no HEADERS',
      [rawFrame(FrameType.CONTINUATION, FrameFlag.END_HEADERS, 1, CONNECT)],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    [
      'a header block over the cap across CONTINUATIONs',
      [headers(1, Buffer.alloc(3000), 0), rawFrame(FrameType.CONTINUATION, 0, 1, Buffer.alloc(3000))],
      H2ErrorCode.ENHANCE_YOUR_CALM,
      'H2_ERR_PROTOCOL',
    ],
    ['HEADERS on an even (server-initiated) stream', [headers(2)], H2ErrorCode.PROTOCOL_ERROR, 'H2_ERR_PROTOCOL'],
    [
      'a stream id lower than one already opened',
      [headers(5), headers(3)],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    ['DATA on a stream never opened', [data(3, 'x')], H2ErrorCode.PROTOCOL_ERROR, 'H2_ERR_PROTOCOL'],
    [
      'DATA padding longer than its frame',
      [headers(1), rawFrame(FrameType.DATA, FrameFlag.PADDED, 1, Buffer.from([9, 1, 2]))],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    [
      'HEADERS padding longer than its frame',
      [
        rawFrame(
          FrameType.HEADERS,
          FrameFlag.END_HEADERS | FrameFlag.PADDED,
          1,
          Buffer.concat([Buffer.from([200]), CONNECT]),
        ),
      ],
      H2ErrorCode.PROTOCOL_ERROR,
      'H2_ERR_PROTOCOL',
    ],
    [
      'DATA beyond the stream window we gave',
      [headers(1), ...Array.from({ length: 5 }, () => data(1, Buffer.alloc(16_384)))],
      H2ErrorCode.FLOW_CONTROL_ERROR,
      'H2_ERR_FLOW_CONTROL',
    ],
    [
      'a header block HPACK cannot decode (index 0, RFC 7541 §6.1)',
      [headers(1, Buffer.from([0x80]))],
      H2ErrorCode.COMPRESSION_ERROR,
      'H2_ERR_COMPRESSION',
    ],
  ];
  for (const [what, bytes, code, error] of CONNECTION_ERRORS) {
    test(`connection error: ${what} -> GOAWAY, the session closes with ${error}`, LIMIT, async () => {
      const r = await connectionError(bytes);
      assert.deepEqual({ code: r.code, error: r.error }, { code, error });
    });
  }

  test(
    'connection error: a connection that does not start with the client preface -> GOAWAY PROTOCOL_ERROR',
    LIMIT,
    async () => {
      const r = await connectionError([], {}, Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
      assert.deepEqual(
        { code: r.code, error: r.error },
        { code: H2ErrorCode.PROTOCOL_ERROR, error: 'H2_ERR_PROTOCOL' },
      );
    },
  );

  test('connection error: a preface whose first frame is not SETTINGS -> GOAWAY PROTOCOL_ERROR', LIMIT, async () => {
    const r = await connectionError([], {}, Buffer.concat([CLIENT_PREFACE, ping('12345678')]));
    assert.deepEqual({ code: r.code, error: r.error }, { code: H2ErrorCode.PROTOCOL_ERROR, error: 'H2_ERR_PROTOCOL' });
  });

  test('GOAWAY names the last stream the server processed', LIMIT, async () => {
    const r = await connectionError([headers(1), headers(3), data(0, 'x')]);
    assert.equal(r.lastStreamId, 3);
  });

  const STREAM_ERRORS: [string, Buffer[], number, number, Partial<H2SessionOptions>?][] = [
    ['PRIORITY of 4 bytes', [rawFrame(FrameType.PRIORITY, 0, 1, Buffer.alloc(4))], 1, H2ErrorCode.FRAME_SIZE_ERROR],
    ['WINDOW_UPDATE of 0 on an open stream', [headers(1), windowUpdate(1, 0)], 1, H2ErrorCode.PROTOCOL_ERROR],
    [
      'WINDOW_UPDATE past 2^31-1 on a stream',
      [headers(1), windowUpdate(1, 2 ** 31 - 1)],
      1,
      H2ErrorCode.FLOW_CONTROL_ERROR,
    ],
    [
      'DATA after END_STREAM (half-closed remote)',
      [headers(1, CONNECT, FrameFlag.END_HEADERS | FrameFlag.END_STREAM), data(1, 'late')],
      1,
      H2ErrorCode.STREAM_CLOSED,
    ],
    [
      'CONNECT with :path (RFC 9113 §8.5)',
      [
        headers(
          1,
          block([
            [':method', 'CONNECT'],
            [':authority', '10.0.0.1:80'],
            [':path', '/'],
          ]),
        ),
      ],
      1,
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'CONNECT with :scheme',
      [
        headers(
          1,
          block([
            [':method', 'CONNECT'],
            [':scheme', 'https'],
            [':authority', '10.0.0.1:80'],
          ]),
        ),
      ],
      1,
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    ['CONNECT without :authority', [headers(1, block([[':method', 'CONNECT']]))], 1, H2ErrorCode.PROTOCOL_ERROR],
    [
      'an uppercase field name',
      [
        headers(
          1,
          block([
            [':method', 'CONNECT'],
            [':authority', '10.0.0.1:80'],
            ['X-Up', '1'],
          ]),
        ),
      ],
      1,
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    ['trailers without END_STREAM', [headers(1), headers(1, block([['x', 'y']]))], 1, H2ErrorCode.PROTOCOL_ERROR],
    [
      'a stream over SETTINGS_MAX_CONCURRENT_STREAMS',
      [headers(1), headers(3), headers(5)],
      5,
      H2ErrorCode.REFUSED_STREAM,
    ],
  ];
  for (const [what, bytes, id, code, overrides] of STREAM_ERRORS) {
    test(`stream error: ${what} -> RST_STREAM on that stream, the connection goes on`, LIMIT, async () => {
      assert.equal(await streamError(bytes, id, overrides), code);
    });
  }

  test(
    'HEADERS with PRIORITY making the stream depend on itself, its block continued in CONTINUATION -> RST_STREAM PROTOCOL_ERROR once the block ends, which is still decoded (HPACK dynamic table in step)',
    LIMIT,
    async () => {
      const { peer } = await openServer();
      // Literals with incremental indexing (RFC 7541 §6.2.1) add dynamic entries 63 (:method) and 62 (:authority) ...
      const indexed = Buffer.concat([
        Buffer.from([0x42, 7]),
        Buffer.from('CONNECT'),
        Buffer.from([0x41, 11]),
        Buffer.from('10.0.0.1:80'),
      ]);
      const selfDependent = Buffer.concat([u32(1), Buffer.from([15]), indexed.subarray(0, 5)]);
      // ... which the next stream's block refers to by index only.
      const byIndex = Buffer.from([0x80 | 63, 0x80 | 62]);
      peer.send(
        PREFACE,
        rawFrame(FrameType.HEADERS, FrameFlag.PRIORITY, 1, selfDependent),
        rawFrame(FrameType.CONTINUATION, FrameFlag.END_HEADERS, 1, indexed.subarray(5)),
        headers(3, byIndex),
      );
      await peer.frame((f) => f.type === FrameType.HEADERS && f.streamId === 3, 'the response on stream 3');
      const rst = peer.frames.find((f) => f.type === FrameType.RST_STREAM && f.streamId === 1);
      assert.equal(rst?.payload.readUInt32BE(0), H2ErrorCode.PROTOCOL_ERROR);
      assert.equal(
        peer.frames.find((f) => f.type === FrameType.GOAWAY),
        undefined,
      );
      peer.socket.destroy();
    },
  );

  test('frames the peer sent before it saw our RST_STREAM are ignored, not answered (§5.1 closed)', LIMIT, async () => {
    const { peer } = await openServer({}, 'reset');
    peer.send(PREFACE, headers(1));
    const rst = await peer.frame((f) => f.type === FrameType.RST_STREAM && f.streamId === 1, 'our RST_STREAM');
    assert.equal(rst.payload.readUInt32BE(0), H2ErrorCode.CANCEL);
    peer.send(
      data(1, 'in flight'),
      headers(1, block([['x', 'trailer']]), FrameFlag.END_HEADERS | FrameFlag.END_STREAM),
      ping('afterrst'),
    );
    await peer.frame(isAck('afterrst'), 'PING ACK');
    assert.equal(peer.frames.filter((f) => f.type === FrameType.RST_STREAM || f.type === FrameType.GOAWAY).length, 1);
    peer.socket.destroy();
  });

  test('unknown frame types are ignored and PING is answered with the same payload', LIMIT, async () => {
    const { peer } = await openServer();
    peer.send(PREFACE, rawFrame(0xfa, 0xff, 1, Buffer.from('extension')), ping('pingpong'));
    await peer.frame(isAck('pingpong'), 'PING ACK');
    assert.equal(
      peer.frames.find((f) => f.type === FrameType.GOAWAY),
      undefined,
    );
    peer.socket.destroy();
  });

  test(
    'SETTINGS_INITIAL_WINDOW_SIZE changes move an open stream send window (§6.9.2); WINDOW_UPDATE reopens it',
    LIMIT,
    async () => {
      const { peer } = await openServer();
      peer.send(
        CLIENT_PREFACE,
        settings([SettingId.INITIAL_WINDOW_SIZE, 0]),
        headers(1),
        data(1, 'hello'),
        ping('barrier1'),
      );
      await peer.frame(isAck('barrier1'), 'PING ACK');
      assert.deepEqual(
        peer.frames.filter((f) => f.type === FrameType.DATA),
        [],
        'a zero window holds the echo back',
      );
      peer.send(settings([SettingId.INITIAL_WINDOW_SIZE, 3]));
      const first = await peer.frame((f) => f.type === FrameType.DATA, 'DATA');
      assert.equal(first.payload.toString(), 'hel');
      peer.send(windowUpdate(1, 10), ping('barrier2'));
      await peer.frame(isAck('barrier2'), 'PING ACK');
      const echoed = peer.frames
        .filter((f) => f.type === FrameType.DATA)
        .map((f) => f.payload.toString())
        .join('');
      assert.equal(echoed, 'hello');
      peer.socket.destroy();
    },
  );

  test(
    'receive flow control: DATA the reader consumed is credited back with WINDOW_UPDATE on the stream',
    LIMIT,
    async () => {
      const { peer } = await openServer();
      peer.send(
        PREFACE,
        headers(1),
        data(1, Buffer.alloc(16_384)),
        data(1, Buffer.alloc(16_384)),
        data(1, Buffer.alloc(8000)),
      );
      const update = await peer.frame(
        (f) => f.type === FrameType.WINDOW_UPDATE && f.streamId === 1,
        'WINDOW_UPDATE on stream 1',
      );
      assert.ok(update.payload.readUInt32BE(0) >= 32_768);
      peer.socket.destroy();
    },
  );

  test('the connection window is opened to HTTP2_CONNECTION_WINDOW_SIZE right after SETTINGS', LIMIT, async () => {
    const { peer } = await openServer();
    peer.send(PREFACE);
    const settingsFrame0 = await peer.frame(
      (f) => f.type === FrameType.SETTINGS && (f.flags & FrameFlag.ACK) === 0,
      'SETTINGS',
    );
    assert.equal(peer.frames.indexOf(settingsFrame0), 0, 'SETTINGS is the first frame of the server preface');
    const update = await peer.frame(
      (f) => f.type === FrameType.WINDOW_UPDATE && f.streamId === 0,
      'connection WINDOW_UPDATE',
    );
    assert.equal(update.payload.readUInt32BE(0), (1 << 20) - 65_535);
    peer.socket.destroy();
  });

  test('a client GOAWAY lets the open stream finish, then the server closes the connection', LIMIT, async () => {
    const { peer, session } = await openServer();
    const closed = once(session, 'close');
    peer.send(
      PREFACE,
      headers(1),
      rawFrame(FrameType.GOAWAY, 0, 0, Buffer.concat([u32(0), u32(0)])),
      data(1, 'bye', FrameFlag.END_STREAM),
    );
    await peer.frame((f) => f.type === FrameType.DATA && (f.flags & FrameFlag.END_STREAM) !== 0, 'the echo END_STREAM');
    const [error] = (await closed) as [Error | undefined];
    assert.equal(error, undefined);
    await peer.closed();
  });

  const FINISHES: [string, (peer: RawPeer, session: H2Session, stream: H2Stream) => void, ErrorCode][] = [
    ['a connection error', (peer) => peer.send(data(0, 'x')), 'H2_ERR_PROTOCOL'],
    [
      'a graceful close whose last stream ends',
      (_peer, session, stream) => (session.close(), stream.reset()),
      'H2_ERR_SESSION_CLOSED',
    ],
  ];
  for (const [what, end, code] of FINISHES) {
    test(
      `${what} while the peer reads nothing: the socket is destroyed after the finish grace, not left waiting for its GOAWAY to flush`,
      LIMIT,
      async () => {
        // More than the kernel holds for a peer that does not read (its receive buffer, which grows only as it reads,
        // plus our send buffer, at most tcp_wmem's 4 MiB): the rest, and the GOAWAY behind it, stay in our socket.
        const unread = 16 * 1024 * 1024;
        const accepted = ctx.server.accepted();
        const socket = await connectHboneTls(ctx.fx, HOST, ctx.server.port);
        const serverSocket = await accepted;
        const session = new H2Session(serverSocket, h2Options('server', { ...SERVER, finishGraceMs: 50 }));
        const peer = new RawPeer(socket);
        await peer.frame((f) => f.type === FrameType.SETTINGS, 'the server SETTINGS');
        socket.pause();
        const opened = once(session, 'stream') as Promise<[H2Stream]>;
        peer.send(
          PREFACE,
          settings([SettingId.INITIAL_WINDOW_SIZE, 2 ** 31 - 1]),
          windowUpdate(0, 2 ** 31 - 1 - 65_535),
          headers(1),
        );
        const [stream] = await opened;
        stream.on('error', () => undefined).respond(200);
        stream.write(Buffer.alloc(unread));
        assert.ok(serverSocket.writableNeedDrain, 'our send path is full');
        const closed = once(session, 'close');
        end(peer, session, stream);
        const [error] = (await closed) as [Error];
        assert.ok(isMeshError(meshErrorFromH2(error), code), String(error));
        socket.destroy();
      },
    );
  }

  describe('client side: a raw server answers our client session', () => {
    /** Our client session on a connection whose server is a raw peer, once the client's preface arrived. */
    async function openClient(
      overrides: Partial<H2SessionOptions> = {},
    ): Promise<{ peer: RawPeer; session: H2Session }> {
      const accepted = ctx.server.accepted();
      const socket = await connectHboneTls(ctx.fx, HOST, ctx.server.port);
      const session = new H2Session(socket, h2Options('client', overrides));
      const peer = new RawPeer(await accepted, CLIENT_PREFACE.length);
      await peer.frame((f) => f.type === FrameType.SETTINGS, 'the client SETTINGS');
      return { peer, session };
    }

    /** Our client session past both prefaces, with stream 1 (a CONNECT) seen by the raw server; `failed` is its error. */
    async function openClientStream(): Promise<{
      peer: RawPeer;
      session: H2Session;
      stream: H2Stream;
      failed: Promise<unknown[]>;
    }> {
      const { peer, session } = await openClient();
      peer.send(settings());
      await once(session, 'remoteSettings');
      const stream = session.connect('10.0.0.1:80');
      const failed = once(stream, 'error');
      await peer.frame((f) => f.type === FrameType.HEADERS && f.streamId === 1, 'the CONNECT');
      return { peer, session, stream, failed };
    }

    test('SETTINGS_ENABLE_PUSH 1 from a server -> GOAWAY PROTOCOL_ERROR', LIMIT, async () => {
      const { peer, session } = await openClient();
      const closed = once(session, 'close');
      peer.send(settings([SettingId.ENABLE_PUSH, 1]));
      const goaway = await peer.frame((f) => f.type === FrameType.GOAWAY, 'GOAWAY');
      assert.equal(goaway.payload.readUInt32BE(4), H2ErrorCode.PROTOCOL_ERROR);
      const [error] = (await closed) as [Error];
      assert.ok(isMeshError(meshErrorFromH2(error), 'H2_ERR_PROTOCOL'));
    });

    test('a response without :status resets the stream with PROTOCOL_ERROR', LIMIT, async () => {
      const { peer, session, failed } = await openClientStream();
      peer.send(headers(1, block([['server', 'raw']])));
      const rst = await peer.frame((f) => f.type === FrameType.RST_STREAM && f.streamId === 1, 'RST_STREAM');
      assert.equal(rst.payload.readUInt32BE(0), H2ErrorCode.PROTOCOL_ERROR);
      const [error] = (await failed) as [Error];
      assert.ok(isMeshError(meshErrorFromH2(error), 'H2_ERR_PROTOCOL'));
      session.destroy();
    });

    test(
      'DATA before the response HEADERS resets the stream with PROTOCOL_ERROR (§8.1); the connection stays up',
      LIMIT,
      async () => {
        const { peer, session, failed } = await openClientStream();
        peer.send(data(1, 'body before the response'));
        const rst = await peer.frame((f) => f.type === FrameType.RST_STREAM && f.streamId === 1, 'RST_STREAM');
        assert.equal(rst.payload.readUInt32BE(0), H2ErrorCode.PROTOCOL_ERROR);
        const [error] = (await failed) as [Error];
        assert.ok(isMeshError(meshErrorFromH2(error), 'H2_ERR_PROTOCOL'), String(error));
        peer.send(ping('stillup!'));
        await peer.frame(isAck('stillup!'), 'the PING ACK that shows the connection survived');
        session.destroy();
      },
    );

    test(
      'a write waiting for connection window on a stream that is destroyed completes once, and is not sent when the window reopens',
      LIMIT,
      async () => {
        const { peer, session, stream } = await openClientStream();
        peer.send(windowUpdate(1, 1 << 20), ping('streamwu'));
        await peer.frame(isAck('streamwu'), 'PING ACK');
        let completions = 0;
        stream.write(Buffer.alloc(100_000), () => completions++);
        await peer.frame((f) => f.type === FrameType.DATA, 'DATA up to the connection window');
        stream.destroy();
        await peer.frame((f) => f.type === FrameType.RST_STREAM && f.streamId === 1, 'RST_STREAM');
        peer.send(windowUpdate(0, 1 << 20), ping('connwu!!'));
        await peer.frame(isAck('connwu!!'), 'PING ACK');
        assert.equal(completions, 1);
        const sent = peer.frames.filter((f) => f.type === FrameType.DATA).reduce((n, f) => n + f.payload.length, 0);
        assert.equal(sent, 65_535, 'only what the first window allowed');
        session.destroy();
      },
    );

    test('a server GOAWAY below our stream refuses it (retryable: H2_ERR_REFUSED_STREAM)', LIMIT, async () => {
      const { peer, session, failed } = await openClientStream();
      peer.send(rawFrame(FrameType.GOAWAY, 0, 0, Buffer.concat([u32(0), u32(0)])));
      const [error] = (await failed) as [Error];
      assert.ok(isMeshError(meshErrorFromH2(error), 'H2_ERR_REFUSED_STREAM'), String(error));
      await once(session, 'close');
    });

    test(
      'a server GOAWAY with an error code fails the streams it left open at once, without waiting for the peer to close (§5.4.1)',
      LIMIT,
      async () => {
        const { peer, session, failed } = await openClientStream();
        const closed = once(session, 'close');
        peer.send(rawFrame(FrameType.GOAWAY, 0, 0, Buffer.concat([u32(1), u32(H2ErrorCode.INTERNAL_ERROR)])));
        const [error] = (await failed) as [Error];
        assert.ok(isMeshError(meshErrorFromH2(error), 'H2_ERR_SESSION_CLOSED'), String(error));
        assert.match(error.message, /INTERNAL_ERROR/);
        const [why] = (await closed) as [Error];
        assert.ok(isMeshError(meshErrorFromH2(why), 'H2_ERR_PEER_RESET'), String(why));
        await peer.closed();
      },
    );

    test(
      'a server that never acknowledges our SETTINGS -> GOAWAY SETTINGS_TIMEOUT once the ACK timeout passes (§6.5.3)',
      LIMIT,
      async () => {
        const { peer, session } = await openClient({ settingsAckTimeoutMs: 50 });
        const closed = once(session, 'close');
        peer.send(settings());
        const goaway = await peer.frame((f) => f.type === FrameType.GOAWAY, 'GOAWAY');
        assert.equal(goaway.payload.readUInt32BE(4), H2ErrorCode.SETTINGS_TIMEOUT);
        const [error] = (await closed) as [Error];
        assert.ok(isMeshError(meshErrorFromH2(error), 'H2_ERR_SETTINGS_TIMEOUT'), String(error));
      },
    );

    test('a server that never sent the preface SETTINGS but a PING first -> GOAWAY PROTOCOL_ERROR', LIMIT, async () => {
      const { peer, session } = await openClient();
      const closed = once(session, 'close');
      peer.send(ping('12345678'));
      const goaway = await peer.frame((f) => f.type === FrameType.GOAWAY, 'GOAWAY');
      assert.equal(goaway.payload.readUInt32BE(4), H2ErrorCode.PROTOCOL_ERROR);
      await closed;
    });
  });
});
