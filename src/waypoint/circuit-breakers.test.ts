import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreakers, NO_LIMITS, type ConnectionLimits } from './circuit-breakers.js';

const limits = (l: Partial<ConnectionLimits>): ConnectionLimits => ({ ...NO_LIMITS, ...l });

test('HTTP/1.1: past maxConnections busy a request waits while fewer than maxPendingRequests do, and overflows otherwise; a freed connection takes the first waiting', () => {
  const cb = new CircuitBreakers();
  const l = limits({ maxConnections: 1, maxPendingRequests: 1 });
  const started: string[] = [];
  const a = cb.admit('c', l, false, () => started.push('a'));
  const b = cb.admit('c', l, false, () => started.push('b'));
  assert.equal(
    cb.admit('c', l, false, () => started.push('c')),
    undefined,
    'the third overflows',
  );
  assert.deepEqual(started, ['a']);
  a!.release();
  assert.deepEqual(started, ['a', 'b'], 'b takes the freed connection');
  const d = cb.admit('c', l, false, () => started.push('d'));
  d!.release();
  b!.release();
  assert.deepEqual(started, ['a', 'b'], 'a waiting request given up never starts');
  cb.admit('c', l, false, () => started.push('e'));
  assert.deepEqual(started, ['a', 'b', 'e']);
});

test('maxRequests counts the requests in flight, over HTTP/2 too, where maxConnections is not the limit', () => {
  const cb = new CircuitBreakers();
  const l = limits({ maxConnections: 1, maxRequests: 2 });
  let n = 0;
  const first = cb.admit('c', l, true, () => n++);
  cb.admit('c', l, true, () => n++);
  assert.equal(n, 2, 'one HTTP/2 connection carries both');
  assert.equal(
    cb.admit('c', l, true, () => n++),
    undefined,
  );
  first!.release();
  assert.notEqual(
    cb.admit('c', l, true, () => n++),
    undefined,
  );
  assert.equal(cb.admit('other', l, true, () => n++) !== undefined, true, 'each backend counts its own');
});

test('maxRetries bounds the retries in flight; without limits everything goes at once', () => {
  const cb = new CircuitBreakers();
  const l = limits({ maxRetries: 1 });
  const r = cb.retry('c', l);
  assert.notEqual(r, undefined);
  assert.equal(cb.retry('c', l), undefined);
  r!.done();
  r!.done();
  assert.notEqual(cb.retry('c', l), undefined);
  assert.notEqual(cb.retry('c', NO_LIMITS), undefined);
  let n = 0;
  for (let i = 0; i < 100; i++) cb.admit('c', NO_LIMITS, false, () => n++);
  assert.equal(n, 100);
});
