import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Gauge, Histogram, MetricsRegistry } from './prom-client-core.js';

test("the classes required from prom-client's own modules are the ones its index exports (the pinned package's layout)", async () => {
  const prom = await import('prom-client');
  assert.equal(MetricsRegistry, prom.Registry);
  assert.equal(Counter, prom.Counter);
  assert.equal(Gauge, prom.Gauge);
  assert.equal(Histogram, prom.Histogram);
});
