import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MeshError, type ErrorCode } from '../../lib/errors.js';
import { H2ErrorCode } from '../../h2/frame.js';
import { connectionEnded, connectionError, H2Error, peerError, streamError, userError } from '../../h2/h2-error.js';
import { compressionError } from '../../h2/hpack/compression-error.js';
import { meshErrorFromH2 } from './mesh-error-from-h2.js';

const CASES: [string, H2Error, ErrorCode][] = [
  ['a connection error we raise', connectionError(H2ErrorCode.FRAME_SIZE_ERROR, 'x'), 'H2_ERR_FRAME_SIZE'],
  ['a stream error we raise', streamError(1, H2ErrorCode.FLOW_CONTROL_ERROR, 'x'), 'H2_ERR_FLOW_CONTROL'],
  ['an HPACK decoding error', compressionError('index 0', 3), 'H2_ERR_COMPRESSION'],
  ['our SETTINGS never acknowledged', connectionError(H2ErrorCode.SETTINGS_TIMEOUT, 'x'), 'H2_ERR_SETTINGS_TIMEOUT'],
  ['a code we raise without a catalogue entry', connectionError(H2ErrorCode.ENHANCE_YOUR_CALM, 'x'), 'H2_ERR_PROTOCOL'],
  ['a call the state refuses', userError(1, H2ErrorCode.STREAM_CLOSED, 'x'), 'H2_ERR_STREAM_CLOSED'],
  ['a stream refused locally', userError(3, H2ErrorCode.REFUSED_STREAM, 'x'), 'H2_ERR_REFUSED_STREAM'],
  ['the peer refusing a stream', peerError(3, H2ErrorCode.REFUSED_STREAM, 'x'), 'H2_ERR_REFUSED_STREAM'],
  ['the peer resetting a stream', peerError(3, H2ErrorCode.PROTOCOL_ERROR, 'x'), 'H2_ERR_PEER_RESET'],
  ["the peer's GOAWAY with an error", peerError(0, H2ErrorCode.INTERNAL_ERROR, 'x'), 'H2_ERR_PEER_RESET'],
  ['a stream ended with its connection', connectionEnded(1, 'x'), 'H2_ERR_SESSION_CLOSED'],
  ['a lost socket', connectionEnded(0, 'x', new Error('read ECONNRESET')), 'H2_ERR_SESSION_CLOSED'],
];

for (const [what, error, code] of CASES) {
  test(`${what} is reported as ${code}, with its message and the H2Error as cause`, () => {
    const reported = meshErrorFromH2(error);
    assert.ok(reported instanceof MeshError);
    assert.equal(reported.code, code);
    assert.equal(reported.message, error.message);
    assert.equal(reported.cause, error);
  });
}

test('an error that is not an H2Error passes through unchanged', () => {
  const e = new MeshError('ZT_ERR_HBONE_CONNECTION_LOST', 'lost');
  assert.equal(meshErrorFromH2(e), e);
  assert.equal(meshErrorFromH2(undefined), undefined);
});
