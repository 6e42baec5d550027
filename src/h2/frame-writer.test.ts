import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  FrameWriter,
  goawayFrame,
  headersFrames,
  pingFrame,
  rstStreamFrame,
  SETTINGS_ACK_FRAME,
  settingsFrame,
} from './frame-writer.js';
import { FrameFlag, FrameType } from './frame.js';

describe('FrameWriter and frame encoders (RFC 9113 §4.1, §6)', () => {
  test('a DATA frame header carries length, END_STREAM and stream id', () => {
    const w = new FrameWriter();
    assert.equal(w.dataHeader(3, 0x010203, true).toString('hex'), '010203' + '00' + '01' + '00000003');
    assert.equal(w.dataHeader(0x7fff_ffff, 5, false).toString('hex'), '000005' + '00' + '00' + '7fffffff');
  });

  test('headers handed out earlier are never overwritten by later ones (they may still sit in a socket queue)', () => {
    const w = new FrameWriter();
    const first = w.dataHeader(1, 100, false);
    const before = first.toString('hex');
    const all = Array.from({ length: 5000 }, (_, i) => w.dataHeader(2 * i + 3, i, i % 2 === 0));
    assert.equal(first.toString('hex'), before);
    all.forEach((h, i) => assert.equal(h.readUInt32BE(5), 2 * i + 3));
  });

  test('WINDOW_UPDATE', () => {
    assert.equal(
      new FrameWriter().windowUpdate(0, 0x10000).toString('hex'),
      '000004' + '08' + '00' + '00000000' + '00010000',
    );
  });

  test('a header block larger than the peer frame size goes out as HEADERS + CONTINUATIONs, END_HEADERS on the last', () => {
    const frames = headersFrames(1, Buffer.alloc(40_000, 1), true, 16_384);
    assert.deepEqual(
      frames.map((f) => [f.readUIntBE(0, 3), f[3], f[4]]),
      [
        [16_384, FrameType.HEADERS, FrameFlag.END_STREAM],
        [16_384, FrameType.CONTINUATION, 0],
        [7232, FrameType.CONTINUATION, FrameFlag.END_HEADERS],
      ],
    );
    assert.deepEqual(
      headersFrames(3, Buffer.from('ab'), false, 16_384).map((f) => f.toString('hex')),
      ['000002' + '01' + '04' + '00000003' + '6162'],
    );
  });

  test('SETTINGS, its ACK, PING, GOAWAY, RST_STREAM', () => {
    assert.equal(
      settingsFrame([
        [4, 65_536],
        [2, 0],
      ]).toString('hex'),
      '00000c040000000000' + '000400010000' + '000200000000',
    );
    assert.equal(SETTINGS_ACK_FRAME.toString('hex'), '000000040100000000');
    assert.equal(
      pingFrame(Buffer.from('abcdefgh'), true).toString('hex'),
      '000008060100000000' + Buffer.from('abcdefgh').toString('hex'),
    );
    assert.equal(goawayFrame(7, 1, 'x').toString('hex'), '000009070000000000' + '00000007' + '00000001' + '78');
    assert.equal(rstStreamFrame(9, 8).toString('hex'), '000004030000000009' + '00000008');
  });
});
