import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { applySettings, INITIAL_PEER_SETTINGS } from './settings.js';
import { H2ErrorCode, SettingId } from './frame.js';
import { H2Error } from './h2-error.js';

const payload = (...entries: [number, number][]): Buffer => {
  const b = Buffer.alloc(entries.length * 6);
  entries.forEach(([id, v], i) => {
    b.writeUInt16BE(id, i * 6);
    b.writeUInt32BE(v, i * 6 + 2);
  });
  return b;
};

const codeOf = (f: () => unknown): number => {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof H2Error);
    assert.equal(e.streamId, 0);
    return e.code ?? -1;
  }
  return -1;
};

describe('SETTINGS values (RFC 9113 §6.5.2)', () => {
  test('known settings apply in order, unknown identifiers are ignored', () => {
    const s = applySettings(
      INITIAL_PEER_SETTINGS,
      payload(
        [SettingId.INITIAL_WINDOW_SIZE, 1],
        [0x99, 7],
        [SettingId.MAX_FRAME_SIZE, 1 << 20],
        [SettingId.INITIAL_WINDOW_SIZE, 2 ** 31 - 1],
        [SettingId.MAX_CONCURRENT_STREAMS, 100],
        [SettingId.HEADER_TABLE_SIZE, 0],
        [SettingId.MAX_HEADER_LIST_SIZE, 8192],
      ),
      false,
    );
    assert.deepEqual(s, {
      headerTableSize: 0,
      enablePush: true,
      maxConcurrentStreams: 100,
      initialWindowSize: 2 ** 31 - 1,
      maxFrameSize: 1 << 20,
      maxHeaderListSize: 8192,
    });
  });

  test('ENABLE_PUSH 1 from a server, or any value above 1, is a PROTOCOL_ERROR; 0 from a server is fine', () => {
    assert.equal(
      codeOf(() => applySettings(INITIAL_PEER_SETTINGS, payload([SettingId.ENABLE_PUSH, 1]), true)),
      H2ErrorCode.PROTOCOL_ERROR,
    );
    assert.equal(
      codeOf(() => applySettings(INITIAL_PEER_SETTINGS, payload([SettingId.ENABLE_PUSH, 2]), false)),
      H2ErrorCode.PROTOCOL_ERROR,
    );
    assert.equal(applySettings(INITIAL_PEER_SETTINGS, payload([SettingId.ENABLE_PUSH, 0]), true).enablePush, false);
  });

  test('INITIAL_WINDOW_SIZE above 2^31-1 is a FLOW_CONTROL_ERROR', () => {
    assert.equal(
      codeOf(() => applySettings(INITIAL_PEER_SETTINGS, payload([SettingId.INITIAL_WINDOW_SIZE, 2 ** 31]), false)),
      H2ErrorCode.FLOW_CONTROL_ERROR,
    );
  });

  test('MAX_FRAME_SIZE outside 16384..16777215 is a PROTOCOL_ERROR', () => {
    assert.equal(
      codeOf(() => applySettings(INITIAL_PEER_SETTINGS, payload([SettingId.MAX_FRAME_SIZE, 16_383]), false)),
      H2ErrorCode.PROTOCOL_ERROR,
    );
    assert.equal(
      codeOf(() => applySettings(INITIAL_PEER_SETTINGS, payload([SettingId.MAX_FRAME_SIZE, 16_777_216]), false)),
      H2ErrorCode.PROTOCOL_ERROR,
    );
    assert.equal(
      applySettings(INITIAL_PEER_SETTINGS, payload([SettingId.MAX_FRAME_SIZE, 16_777_215]), false).maxFrameSize,
      16_777_215,
    );
  });
});
