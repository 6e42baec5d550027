import assert from 'node:assert/strict';
import { setImmediate } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { systemClock } from '../controllers/clock.js';
import { ManualClock } from '../../test/helpers/manual-clock.js';
import type { HandlerTarget } from './container-handler.js';
import { runPreStopHook } from './pre-stop-hook.js';

/** Runs exec hooks on the host, as runc exec would in the container. */
const target: HandlerTarget = {
  podIp: '127.0.0.1',
  execArgv: (cmd) => [...cmd],
  nodeNetnsPath: '/proc/self/ns/net',
  ports: [],
};
const names = { container: 'app', pod: 'web_demo(uid-1)' };

describe('runPreStopHook (kuberuntime_container.go executePreStopHook)', () => {
  test('a sleep hook takes its seconds of the grace period', async () => {
    const clock = new ManualClock(0);
    const done = runPreStopHook({ sleep: { seconds: 3 } }, target, 10_000, clock, names);
    await setImmediate();
    clock.advance(3_000);
    assert.deepEqual(await done, { elapsedMs: 3_000 });
  });

  test('a hook that outlasts the grace period is left behind when the grace is over', async () => {
    const clock = new ManualClock(0);
    const done = runPreStopHook({ sleep: { seconds: 60 } }, target, 5_000, clock, names);
    await setImmediate();
    clock.advance(5_000);
    assert.deepEqual(await done, { elapsedMs: 5_000 });
  });

  test("a failing exec hook reports kubelet's message, naming the command, container and pod", async () => {
    const r = await runPreStopHook({ exec: { command: ['sh', '-c', 'exit 7'] } }, target, 5_000, systemClock, names);
    assert.match(
      r.failure ?? '',
      /^Exec lifecycle hook \(\[sh -c exit 7\]\) for Container "app" in Pod "web_demo\(uid-1\)" failed - error: .*7/,
    );
  });

  test('an exec hook that succeeds is no failure', async () => {
    const r = await runPreStopHook({ exec: { command: ['true'] } }, target, 5_000, systemClock, names);
    assert.equal(r.failure, undefined);
  });
});
