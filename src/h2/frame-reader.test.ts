import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FrameReader, type FrameSink } from './frame-reader.js';
import { FrameFlag, FrameType, H2ErrorCode } from './frame.js';
import { H2Error } from './h2-error.js';
import { rawFrame } from './frame-writer.js';

type Event = readonly unknown[];

/** Records every callback; DATA pieces are kept as views so tests can check they were not copied. */
interface Recorder {
  readonly sink: FrameSink;
  readonly events: Event[];
  readonly pieces: Buffer[];
}

function recorder(accept = true): Recorder {
  const events: Event[] = [];
  const pieces: Buffer[] = [];
  const sink: FrameSink = {
    onDataStart: (id, frameLength, dataLength) => (events.push(['dataStart', id, frameLength, dataLength]), accept),
    onData: (id, data) => {
      pieces.push(data);
      events.push(['data', id, data.toString()]);
    },
    onDataEnd: (id, end) => events.push(['dataEnd', id, end]),
    onHeaders: (id, block, end) => events.push(['headers', id, block.toString(), end]),
    onRstStream: (id, code) => events.push(['rst', id, code]),
    onSettings: (p) => events.push(['settings', p.toString('hex')]),
    onSettingsAck: () => events.push(['settingsAck']),
    onPing: (p, ack) => events.push(['ping', p.toString(), ack]),
    onGoaway: (last, code, debug) => events.push(['goaway', last, code, debug.toString()]),
    onWindowUpdate: (id, inc) => events.push(['windowUpdate', id, inc]),
    onStreamError: (e) => events.push(['streamError', e.streamId, e.code]),
  };
  return { sink, events, pieces };
}

const MAX_FRAME = 16_384;
const txt = (s: string): Buffer => Buffer.from(s);
/** A reader past the preface's SETTINGS, which every connection starts with. */
const newReader = (rec: Recorder, maxBlock = 4096): FrameReader => {
  const r = new FrameReader(rec.sink, MAX_FRAME, maxBlock);
  r.push(rawFrame(FrameType.SETTINGS, 0, 0, Buffer.alloc(0)));
  rec.events.length = 0;
  return r;
};
const u32 = (...v: number[]): Buffer => {
  const b = Buffer.alloc(v.length * 4);
  v.forEach((x, i) => b.writeUInt32BE(x, i * 4));
  return b;
};

/** One connection's worth of frames covering every type the reader hands out. */
const SAMPLE = Buffer.concat([
  rawFrame(FrameType.SETTINGS, 0, 0, Buffer.from('000400100000', 'hex')),
  rawFrame(FrameType.SETTINGS, FrameFlag.ACK, 0, Buffer.alloc(0)),
  rawFrame(
    FrameType.HEADERS,
    FrameFlag.PADDED | FrameFlag.PRIORITY,
    1,
    Buffer.concat([Buffer.from([3]), u32(0), Buffer.from([16]), txt('hea'), Buffer.alloc(3)]),
  ),
  rawFrame(FrameType.CONTINUATION, FrameFlag.END_HEADERS, 1, txt('ders')),
  rawFrame(FrameType.DATA, 0, 1, txt('hello ')),
  rawFrame(FrameType.DATA, FrameFlag.PADDED, 1, Buffer.concat([Buffer.from([4]), txt('world'), Buffer.alloc(4)])),
  rawFrame(0xfa, 0xff, 7, txt('an extension frame')),
  rawFrame(FrameType.PRIORITY, 0, 3, Buffer.from([0, 0, 0, 1, 200])),
  rawFrame(FrameType.DATA, FrameFlag.END_STREAM, 1, Buffer.alloc(0)),
  rawFrame(FrameType.WINDOW_UPDATE, 0, 0, u32(0x8000_0100)),
  rawFrame(FrameType.PING, FrameFlag.ACK, 0, txt('12345678')),
  rawFrame(FrameType.RST_STREAM, 0, 0x8000_0003, u32(8)),
  rawFrame(FrameType.GOAWAY, 0, 0, Buffer.concat([u32(5, 0), txt('bye')])),
]);

const SAMPLE_EVENTS: Event[] = [
  ['settings', '000400100000'],
  ['settingsAck'],
  ['headers', 1, 'headers', false],
  ['dataStart', 1, 6, 6],
  ['data', 1, 'hello '],
  ['dataEnd', 1, false],
  ['dataStart', 1, 10, 5],
  ['data', 1, 'world'],
  ['dataEnd', 1, false],
  ['dataStart', 1, 0, 0],
  ['dataEnd', 1, true],
  ['windowUpdate', 0, 0x100],
  ['ping', '12345678', true],
  ['rst', 3, 8],
  ['goaway', 5, 0, 'bye'],
];

/** Merges adjacent DATA pieces of one frame, so chunkings can be compared. */
function merged(events: Event[]): Event[] {
  const out: Event[] = [];
  for (const e of events) {
    const prev = out[out.length - 1];
    if (e[0] === 'data' && prev?.[0] === 'data')
      out[out.length - 1] = ['data', e[1], `${String(prev[2])}${String(e[2])}`];
    else out.push(e);
  }
  return out;
}

function connectionErrorOf(frame: Buffer): { streamId: number; code: number | undefined } {
  const r = recorder();
  try {
    newReader(r).push(frame);
  } catch (e) {
    assert.ok(e instanceof H2Error, String(e));
    return { streamId: e.streamId, code: e.code };
  }
  assert.fail(`no connection error; events ${JSON.stringify(r.events)}`);
}

describe('FrameReader (RFC 9113 §4, §6)', () => {
  test('the first frame of a connection must be SETTINGS (not an ACK): anything else is a PROTOCOL_ERROR', () => {
    for (const first of [
      rawFrame(FrameType.PING, 0, 0, Buffer.alloc(8)),
      rawFrame(FrameType.SETTINGS, FrameFlag.ACK, 0, Buffer.alloc(0)),
      rawFrame(0xfa, 0, 0, Buffer.alloc(0)),
    ]) {
      assert.throws(
        () => new FrameReader(recorder().sink, MAX_FRAME, 4096).push(first),
        (e) => e instanceof H2Error && e.streamId === 0 && e.code === H2ErrorCode.PROTOCOL_ERROR,
      );
    }
  });

  test('a connection in one chunk yields every frame, padding and priority fields stripped, unknown types ignored', () => {
    const r = recorder();
    newReader(r).push(SAMPLE);
    assert.deepEqual(r.events, SAMPLE_EVENTS);
  });

  test('split at every byte boundary, and fed byte by byte, the frames are the same', () => {
    for (let cut = 1; cut < SAMPLE.length; cut++) {
      const r = recorder();
      const reader = newReader(r);
      reader.push(SAMPLE.subarray(0, cut));
      reader.push(SAMPLE.subarray(cut));
      assert.deepEqual(merged(r.events), SAMPLE_EVENTS, `cut at ${cut}`);
    }
    const r = recorder();
    const reader = newReader(r);
    for (let i = 0; i < SAMPLE.length; i++) reader.push(SAMPLE.subarray(i, i + 1));
    assert.deepEqual(merged(r.events), SAMPLE_EVENTS);
  });

  test('DATA payloads are handed out as views of the input chunks, never copies, across TLS-record-sized chunks', () => {
    const payload = Buffer.alloc(40_000, 7);
    const wire = Buffer.concat([
      rawFrame(FrameType.DATA, 0, 1, payload.subarray(0, 16_000)),
      rawFrame(FrameType.DATA, 0, 1, payload.subarray(16_000, 32_000)),
      rawFrame(FrameType.DATA, 0, 1, payload.subarray(32_000)),
    ]);
    const r = recorder();
    const reader = newReader(r);
    const chunks: Buffer[] = [];
    for (let off = 0; off < wire.length; off += 16_384) chunks.push(Buffer.from(wire.subarray(off, off + 16_384)));
    for (const c of chunks) reader.push(c);
    assert.equal(Buffer.concat(r.pieces).compare(payload), 0);
    for (const p of r.pieces)
      assert.ok(
        chunks.some(
          (c) =>
            c.buffer === p.buffer && p.byteOffset >= c.byteOffset && p.byteOffset + p.length <= c.byteOffset + c.length,
        ),
      );
    assert.ok(r.pieces.length > 3, 'frames split across chunks come out in pieces');
  });

  test('a DATA frame the sink refuses (its stream is gone) is skipped and still ends', () => {
    const r = recorder(false);
    newReader(r).push(rawFrame(FrameType.DATA, FrameFlag.END_STREAM, 5, txt('dropped')));
    assert.deepEqual(r.events, [
      ['dataStart', 5, 7, 7],
      ['dataEnd', 5, true],
    ]);
  });

  test('a control frame split across chunks is assembled; whole in one chunk it is a view', () => {
    const r = recorder();
    const reader = newReader(r);
    const goaway = rawFrame(FrameType.GOAWAY, 0, 0, Buffer.concat([u32(1, 2), txt('split debug data')]));
    reader.push(goaway.subarray(0, 14));
    reader.push(goaway.subarray(14));
    assert.deepEqual(r.events, [['goaway', 1, 2, 'split debug data']]);
  });

  const CONNECTION_ERRORS: [string, Buffer, number][] = [
    [
      'a frame longer than our SETTINGS_MAX_FRAME_SIZE',
      rawFrame(FrameType.DATA, 0, 1, Buffer.alloc(MAX_FRAME + 1)),
      H2ErrorCode.FRAME_SIZE_ERROR,
    ],
    [
      'an unknown frame type longer than our max frame size',
      rawFrame(0xee, 0, 0, Buffer.alloc(MAX_FRAME + 1)),
      H2ErrorCode.FRAME_SIZE_ERROR,
    ],
    ['DATA on stream 0', rawFrame(FrameType.DATA, 0, 0, txt('x')), H2ErrorCode.PROTOCOL_ERROR],
    [
      'DATA padding longer than the payload',
      rawFrame(FrameType.DATA, FrameFlag.PADDED, 1, Buffer.from([5, 1, 2, 3])),
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'DATA padded with no room for Pad Length',
      rawFrame(FrameType.DATA, FrameFlag.PADDED, 1, Buffer.alloc(0)),
      H2ErrorCode.FRAME_SIZE_ERROR,
    ],
    [
      'HEADERS on stream 0',
      rawFrame(FrameType.HEADERS, FrameFlag.END_HEADERS, 0, txt('x')),
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'HEADERS padding longer than the payload',
      rawFrame(FrameType.HEADERS, FrameFlag.END_HEADERS | FrameFlag.PADDED, 1, Buffer.from([3, 1, 2])),
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'HEADERS with PRIORITY too short for its fields',
      rawFrame(FrameType.HEADERS, FrameFlag.END_HEADERS | FrameFlag.PRIORITY, 1, Buffer.from([0, 0, 0])),
      H2ErrorCode.FRAME_SIZE_ERROR,
    ],
    ['PRIORITY on stream 0', rawFrame(FrameType.PRIORITY, 0, 0, Buffer.alloc(5)), H2ErrorCode.PROTOCOL_ERROR],
    ['RST_STREAM on stream 0', rawFrame(FrameType.RST_STREAM, 0, 0, u32(0)), H2ErrorCode.PROTOCOL_ERROR],
    ['RST_STREAM of 3 bytes', rawFrame(FrameType.RST_STREAM, 0, 1, Buffer.alloc(3)), H2ErrorCode.FRAME_SIZE_ERROR],
    ['SETTINGS on stream 1', rawFrame(FrameType.SETTINGS, 0, 1, Buffer.alloc(0)), H2ErrorCode.PROTOCOL_ERROR],
    ['SETTINGS of 7 bytes', rawFrame(FrameType.SETTINGS, 0, 0, Buffer.alloc(7)), H2ErrorCode.FRAME_SIZE_ERROR],
    [
      'SETTINGS ACK with a payload',
      rawFrame(FrameType.SETTINGS, FrameFlag.ACK, 0, Buffer.alloc(6)),
      H2ErrorCode.FRAME_SIZE_ERROR,
    ],
    [
      'PUSH_PROMISE (push is never enabled)',
      rawFrame(FrameType.PUSH_PROMISE, FrameFlag.END_HEADERS, 1, u32(2)),
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    ['PING on stream 1', rawFrame(FrameType.PING, 0, 1, Buffer.alloc(8)), H2ErrorCode.PROTOCOL_ERROR],
    ['PING of 7 bytes', rawFrame(FrameType.PING, 0, 0, Buffer.alloc(7)), H2ErrorCode.FRAME_SIZE_ERROR],
    ['GOAWAY on stream 1', rawFrame(FrameType.GOAWAY, 0, 1, Buffer.alloc(8)), H2ErrorCode.PROTOCOL_ERROR],
    ['GOAWAY of 7 bytes', rawFrame(FrameType.GOAWAY, 0, 0, Buffer.alloc(7)), H2ErrorCode.FRAME_SIZE_ERROR],
    [
      'WINDOW_UPDATE of 5 bytes',
      rawFrame(FrameType.WINDOW_UPDATE, 0, 1, Buffer.alloc(5)),
      H2ErrorCode.FRAME_SIZE_ERROR,
    ],
    [
      'WINDOW_UPDATE of 0 on the connection',
      rawFrame(FrameType.WINDOW_UPDATE, 0, 0, u32(0)),
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'WINDOW_UPDATE of 0 with only the reserved bit set',
      rawFrame(FrameType.WINDOW_UPDATE, 0, 0, u32(0x8000_0000)),
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'CONTINUATION with no HEADERS before it',
      rawFrame(FrameType.CONTINUATION, FrameFlag.END_HEADERS, 1, txt('x')),
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'CONTINUATION on stream 0',
      rawFrame(FrameType.CONTINUATION, FrameFlag.END_HEADERS, 0, txt('x')),
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'another frame between HEADERS and its CONTINUATION',
      Buffer.concat([rawFrame(FrameType.HEADERS, 0, 1, txt('a')), rawFrame(FrameType.PING, 0, 0, Buffer.alloc(8))]),
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'an unknown frame type between HEADERS and its CONTINUATION',
      Buffer.concat([rawFrame(FrameType.HEADERS, 0, 1, txt('a')), rawFrame(0xfa, 0, 1, Buffer.alloc(0))]),
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'a CONTINUATION of another stream',
      Buffer.concat([
        rawFrame(FrameType.HEADERS, 0, 1, txt('a')),
        rawFrame(FrameType.CONTINUATION, FrameFlag.END_HEADERS, 3, txt('b')),
      ]),
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'a header block past the cap across CONTINUATIONs',
      Buffer.concat([
        rawFrame(FrameType.HEADERS, 0, 1, Buffer.alloc(3000)),
        rawFrame(FrameType.CONTINUATION, 0, 1, Buffer.alloc(3000)),
      ]),
      H2ErrorCode.ENHANCE_YOUR_CALM,
    ],
  ];
  for (const [what, frame, code] of CONNECTION_ERRORS) {
    test(`connection error: ${what}`, () => {
      assert.deepEqual(connectionErrorOf(frame), { streamId: 0, code });
    });
  }

  const STREAM_ERRORS: [string, Buffer, number][] = [
    ['PRIORITY of 4 bytes', rawFrame(FrameType.PRIORITY, 0, 3, Buffer.alloc(4)), H2ErrorCode.FRAME_SIZE_ERROR],
    [
      'PRIORITY making a stream depend on itself',
      rawFrame(FrameType.PRIORITY, 0, 3, Buffer.from([0, 0, 0, 3, 1])),
      H2ErrorCode.PROTOCOL_ERROR,
    ],
    ['WINDOW_UPDATE of 0 on a stream', rawFrame(FrameType.WINDOW_UPDATE, 0, 3, u32(0)), H2ErrorCode.PROTOCOL_ERROR],
  ];
  for (const [what, frame, code] of STREAM_ERRORS) {
    test(`stream error, the connection goes on: ${what}`, () => {
      const r = recorder();
      const reader = newReader(r);
      reader.push(Buffer.concat([frame, rawFrame(FrameType.PING, 0, 0, txt('still up'))]));
      assert.deepEqual(r.events, [
        ['streamError', 3, code],
        ['ping', 'still up', false],
      ]);
    });
  }

  const SELF_DEPENDENT: [string, Buffer][] = [
    [
      'in one frame',
      rawFrame(
        FrameType.HEADERS,
        FrameFlag.END_HEADERS | FrameFlag.PRIORITY,
        5,
        Buffer.concat([u32(5), Buffer.from([1]), txt('blk')]),
      ),
    ],
    [
      'with its block continued in CONTINUATION frames',
      Buffer.concat([
        rawFrame(FrameType.HEADERS, FrameFlag.PRIORITY, 5, Buffer.concat([u32(5), Buffer.from([1]), txt('b')])),
        rawFrame(FrameType.CONTINUATION, 0, 5, txt('l')),
        rawFrame(FrameType.CONTINUATION, FrameFlag.END_HEADERS, 5, txt('k')),
      ]),
    ],
  ];
  for (const [what, frames] of SELF_DEPENDENT) {
    test(`HEADERS that make their stream depend on itself, ${what}: the whole block is still delivered (HPACK state), then a stream error`, () => {
      const r = recorder();
      newReader(r).push(Buffer.concat([frames, rawFrame(FrameType.HEADERS, FrameFlag.END_HEADERS, 7, txt('next'))]));
      assert.deepEqual(r.events, [
        ['headers', 5, 'blk', false],
        ['streamError', 5, H2ErrorCode.PROTOCOL_ERROR],
        ['headers', 7, 'next', false],
      ]);
    });
  }

  test('the reserved bit of a stream id is ignored', () => {
    const r = recorder();
    newReader(r).push(rawFrame(FrameType.DATA, FrameFlag.END_STREAM, 0x8000_0001, txt('r')));
    assert.deepEqual(r.events, [
      ['dataStart', 1, 1, 1],
      ['data', 1, 'r'],
      ['dataEnd', 1, true],
    ]);
  });

  test('a frame of exactly our max frame size is accepted', () => {
    const r = recorder();
    newReader(r).push(rawFrame(FrameType.DATA, 0, 1, Buffer.alloc(MAX_FRAME)));
    assert.equal(Buffer.concat(r.pieces).length, MAX_FRAME);
  });
});
