import { test } from 'node:test';
import assert from 'node:assert/strict';
import { H2ErrorCode } from '../frame.js';
import { H2Error } from '../h2-error.js';
import { BlockCursor } from './block-cursor.js';

test('reads a view of the block (a subarray keeps its offset), and a read past the end names what was cut and where', () => {
  const backing = Uint8Array.of(9, 9, 0x82, 0x86);
  const c = new BlockCursor(backing.subarray(2));
  assert.equal(c.remaining, 2);
  assert.equal(c.next('x'), 0x82);
  assert.equal(c.next('x'), 0x86);
  assert.equal(c.remaining, 0);
  assert.throws(
    () => c.next('a field representation'),
    (e: unknown) =>
      e instanceof H2Error &&
      e.code === H2ErrorCode.COMPRESSION_ERROR &&
      e.message === 'HPACK: block ends inside a field representation at byte 2 of the header block',
  );
  backing[2] = 0x84;
  assert.equal(c.bytes[0], 0x84, 'no copy');
});
