import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { startKeepalive } from './h2-keepalive.js';

/** A session stand-in whose peer acknowledges PINGs only when told to. */
class FakeSession extends EventEmitter {
  pings = 0;
  constructor(private readonly answers: boolean) {
    super();
  }
  ping(): Promise<void> {
    this.pings++;
    return this.answers ? new Promise((resolve) => setImmediate(resolve)) : new Promise(() => undefined);
  }
}

// The keepalive's timers are unref'd (they must not keep ztunnel alive); hold the loop open while testing.
const holdLoop = (): NodeJS.Timeout => setInterval(() => undefined, 1000);

test('a peer that stops acknowledging PINGs is declared dead after the timeout', async () => {
  const hold = holdLoop();
  const s = new FakeSession(false);
  const why = await new Promise<string>((resolve) => startKeepalive(s, resolve, 10, 30));
  assert.match(why, /no PING acknowledgement/);
  s.emit('close');
  clearInterval(hold);
});

test('a peer that acknowledges PINGs stays up, and timers stop when the session closes', async () => {
  const hold = holdLoop();
  const s = new FakeSession(true);
  let dead = false;
  startKeepalive(s, () => (dead = true), 10, 30);
  await new Promise((r) => setTimeout(r, 120));
  assert.equal(dead, false);
  assert.ok(s.pings >= 3, `${s.pings} pings sent`);
  s.emit('close');
  const n = s.pings;
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(s.pings, n, 'no PINGs after close');
  clearInterval(hold);
});
