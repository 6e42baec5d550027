import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULTS } from '../config.js';
import { hboneSessionOptions } from './hbone-session-options.js';

test("HBONE client settings are ztunnel's client's: Istio's windows and frame size, a 16 KiB header list, no stream limit advertised", () => {
  const o = hboneSessionOptions(DEFAULTS, 'client');
  assert.deepEqual(
    {
      streamWindowSize: o.streamWindowSize,
      connectionWindowSize: o.connectionWindowSize,
      maxFrameSize: o.maxFrameSize,
      maxHeaderListSize: o.maxHeaderListSize,
      maxConcurrentStreams: o.maxConcurrentStreams,
    },
    {
      streamWindowSize: 4 * 1024 * 1024,
      connectionWindowSize: 16 * 1024 * 1024,
      maxFrameSize: 1024 * 1024,
      maxHeaderListSize: 16 * 1024,
      maxConcurrentStreams: undefined,
    },
  );
});

test("HBONE server settings are ztunnel's server's: 200 concurrent streams and a 64 KiB header list", () => {
  const o = hboneSessionOptions({ ...DEFAULTS, http2StreamWindowSize: 65_535 }, 'server');
  assert.equal(o.maxConcurrentStreams, 200);
  assert.equal(o.maxHeaderListSize, 64 * 1024);
  assert.equal(o.streamWindowSize, 65_535, 'HTTP2_STREAM_WINDOW_SIZE is what the server advertises too');
});

test('each HBONE connection gets its own HPACK encoder (its dynamic-table state is per connection)', () => {
  assert.notEqual(hboneSessionOptions(DEFAULTS, 'client').encoder, hboneSessionOptions(DEFAULTS, 'client').encoder);
});

test('the peer has the HBONE connect timeout to acknowledge our SETTINGS and to take our last frames', () => {
  const o = hboneSessionOptions({ ...DEFAULTS, hboneConnectTimeoutMs: 250 }, 'server');
  assert.deepEqual([o.settingsAckTimeoutMs, o.finishGraceMs], [250, 250]);
  assert.equal(hboneSessionOptions(DEFAULTS, 'client').settingsAckTimeoutMs, 10_000);
});
