import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ReceiveWindow } from './receive-window.js';

describe('ReceiveWindow (RFC 9113 §6.9)', () => {
  test('data beyond the window is refused; released data returns in batches of half the window', () => {
    const w = new ReceiveWindow(100);
    assert.equal(w.receive(60), true);
    assert.equal(w.receive(41), false, 'only 40 left');
    assert.equal(w.receive(40), true);
    assert.equal(w.receive(1), false);
    assert.equal(w.release(30), 0);
    assert.equal(w.receive(1), false, 'credit not yet returned is not yet usable');
    assert.equal(w.release(20), 50);
    assert.equal(w.receive(50), true);
    assert.equal(w.receive(1), false);
  });

  test('a sender never stalls while the consumer keeps up: returned credit stays ahead of the window', () => {
    const w = new ReceiveWindow(65_535);
    let inFlightCredit = 65_535;
    for (let i = 0; i < 1000; i++) {
      const n = Math.min(16_384, inFlightCredit);
      assert.ok(n > 0, `stalled after ${i} frames`);
      assert.equal(w.receive(n), true);
      inFlightCredit -= n;
      inFlightCredit += w.release(n);
    }
  });
});
