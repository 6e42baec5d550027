import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EXPECTATIONS_TIMEOUT_MS, Expectations } from './expectations.js';

test('an owner is held until every expected create and delete was observed', () => {
  const e = new Expectations();
  assert.ok(e.satisfied('ns/rs'));
  e.expect('ns/rs', 2, 1);
  e.observedAdd('ns/rs');
  e.observedDelete('ns/rs');
  assert.ok(!e.satisfied('ns/rs'), 'one create is still on its way');
  e.observedAdd('ns/rs');
  assert.ok(e.satisfied('ns/rs'));
});

test('expectations that were never observed lapse after the timeout, so a lost event cannot stall an owner', () => {
  let now = 0;
  const e = new Expectations(() => now);
  e.expect('ns/rs', 1, 0);
  now = EXPECTATIONS_TIMEOUT_MS;
  assert.ok(!e.satisfied('ns/rs'));
  now = EXPECTATIONS_TIMEOUT_MS + 1;
  assert.ok(e.satisfied('ns/rs'));
});
