import assert from 'node:assert/strict';
import { setImmediate } from 'node:timers/promises';
import { describe, test } from 'node:test';
import type { V1Probe } from '@kubernetes/client-node';
import { ManualClock } from '../../test/helpers/manual-clock.js';
import type { HandlerOutcome } from './container-handler.js';
import { Prober, type ProbeKind, type ProbeResult } from './prober.js';

/** A prober whose runs answer from `answers` in turn (true: success), on a manual clock. */
function prober(kind: ProbeKind, probe: V1Probe, answers: boolean[]) {
  const clock = new ManualClock(0);
  const runs: number[] = [];
  const results: ProbeResult[] = [];
  const failures: string[] = [];
  const p = new Prober(
    kind,
    probe,
    (timeoutMs) => {
      runs.push(timeoutMs);
      const ok = answers.shift() ?? true;
      return Promise.resolve<HandlerOutcome>(ok ? { ok: true } : { ok: false, why: 'exit status 1' });
    },
    clock,
  );
  p.on('result', (r) => results.push(r));
  p.on('failed', (why) => failures.push(why));
  /** Moves the clock on by `ms` and lets the run that came due finish. */
  const advance = async (ms: number): Promise<void> => {
    clock.advance(ms);
    await setImmediate();
  };
  return { p, clock, runs, results, failures, advance };
}

describe('Prober (kubelet prober/worker.go)', () => {
  test('each kind starts where kubelet starts it: readiness failure, liveness success, startup unknown', () => {
    assert.equal(prober('readiness', {}, []).p.result, 'failure');
    assert.equal(prober('liveness', {}, []).p.result, 'success');
    assert.equal(prober('startup', {}, []).p.result, 'unknown');
  });

  test('the first run waits initialDelaySeconds, then one every periodSeconds with timeoutSeconds', async () => {
    const t = prober('readiness', { initialDelaySeconds: 5, periodSeconds: 2, timeoutSeconds: 3 }, []);
    t.p.start();
    await t.advance(4_999);
    assert.equal(t.runs.length, 0);
    await t.advance(1);
    assert.deepEqual(t.runs, [3_000]);
    await t.advance(2_000);
    assert.equal(t.runs.length, 2);
    t.p.stop();
    await t.advance(10_000);
    assert.equal(t.runs.length, 2);
  });

  test('liveness turns failure only after failureThreshold failures in a row, then holds: no more runs', async () => {
    const t = prober('liveness', { periodSeconds: 1, failureThreshold: 3 }, [false, false, true, false, false, false]);
    t.p.start();
    for (let i = 0; i < 5; i++) await t.advance(i === 0 ? 0 : 1_000);
    assert.equal(t.p.result, 'success', 'a success in between starts the count again');
    await t.advance(1_000);
    assert.equal(t.p.result, 'failure');
    assert.deepEqual(t.results, ['failure']);
    assert.equal(t.failures.length, 5, 'every failed run is reported (an Unhealthy event each)');
    await t.advance(5_000);
    assert.equal(t.runs.length, 6);
  });

  test('readiness needs successThreshold successes to turn success and keeps probing after a failure', async () => {
    const t = prober('readiness', { periodSeconds: 1, successThreshold: 2, failureThreshold: 1 }, [
      true,
      true,
      false,
      true,
      true,
    ]);
    t.p.start();
    await t.advance(0);
    assert.equal(t.p.result, 'failure');
    await t.advance(1_000);
    assert.equal(t.p.result, 'success');
    await t.advance(1_000);
    assert.equal(t.p.result, 'failure');
    await t.advance(1_000);
    await t.advance(1_000);
    assert.deepEqual(t.results, ['success', 'failure', 'success']);
  });

  test('startup turns success at its first success and failure after failureThreshold failures', async () => {
    const ok = prober('startup', { periodSeconds: 1 }, [false, true]);
    ok.p.start();
    await ok.advance(0);
    assert.equal(ok.p.result, 'unknown');
    await ok.advance(1_000);
    assert.deepEqual(ok.results, ['success']);
    const bad = prober('startup', { periodSeconds: 1, failureThreshold: 2 }, [false, false, false]);
    bad.p.start();
    await bad.advance(0);
    await bad.advance(1_000);
    assert.deepEqual(bad.results, ['failure']);
    await bad.advance(1_000);
    assert.equal(bad.runs.length, 2);
  });
});
