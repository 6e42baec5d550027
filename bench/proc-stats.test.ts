import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fittedChange } from './proc-stats.js';

test('fittedChange: a steady decline over the rounds is measured across the run relative to the mean, with no interval', () => {
  const { change, halfWidth95 } = fittedChange([110, 105, 100, 95, 90]);
  assert.ok(Math.abs(change - -0.2) < 1e-12, String(change));
  assert.ok(halfWidth95 < 1e-12);
});

test('fittedChange: first and last rounds far apart but no trend through the rest fit to a small change with a wide interval', () => {
  const { change, halfWidth95 } = fittedChange([80, 120, 100, 90, 110, 100, 95, 105, 100, 100]);
  assert.ok(Math.abs(change) < 0.05, String(change));
  assert.ok(halfWidth95 > Math.abs(change));
});
