import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { startKeepalive } from './h2-keepalive.js';

/** ztunnel's keepalive (ztunnel `src/proxy/h2.rs`): PING every 10s, dead after 20s without an ACK. */
const INTERVAL_MS = 10_000;
const TIMEOUT_MS = 20_000;

/** A session stand-in whose peer acknowledges each PING at once, or never. */
class FakeSession extends EventEmitter {
  pings = 0;
  constructor(private readonly answers: boolean) {
    super();
  }
  ping(): Promise<void> {
    this.pings++;
    return this.answers ? Promise.resolve() : new Promise(() => undefined);
  }
}

/** Lets the keepalive see the ACKs of the PINGs sent so far (promise callbacks run as microtasks). */
const acknowledged = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('a peer that stops acknowledging PINGs is declared dead once a PING goes unanswered for the timeout', (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'setTimeout'] });
  const s = new FakeSession(false);
  let why: string | undefined;
  startKeepalive(s, (w) => (why = w), INTERVAL_MS, TIMEOUT_MS);
  t.mock.timers.tick(INTERVAL_MS - 1);
  assert.equal(s.pings, 0, 'the first PING waits one interval');
  t.mock.timers.tick(1);
  assert.equal(s.pings, 1);
  t.mock.timers.tick(TIMEOUT_MS - 1);
  assert.equal(why, undefined);
  assert.equal(s.pings, 1, 'no second PING while one is unanswered');
  t.mock.timers.tick(1);
  assert.equal(why, 'no PING acknowledgement within 20s');
  s.emit('close');
});

test('a peer that acknowledges PINGs stays up, one PING per interval, and no PING goes out after the session closes', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'setTimeout'] });
  const s = new FakeSession(true);
  let dead = false;
  startKeepalive(s, () => (dead = true), INTERVAL_MS, TIMEOUT_MS);
  for (let i = 1; i <= 5; i++) {
    t.mock.timers.tick(INTERVAL_MS);
    await acknowledged();
    assert.equal(s.pings, i);
  }
  t.mock.timers.tick(TIMEOUT_MS);
  assert.equal(dead, false);
  s.emit('close');
  const sent = s.pings;
  t.mock.timers.tick(10 * INTERVAL_MS);
  assert.equal(s.pings, sent, 'no PINGs after close');
});
