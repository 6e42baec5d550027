import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Histogram, MetricsRegistry } from '../ztunnel/admin/prom-client-core.js';
import { SeriesMetric } from './series-metric.js';

const LABELS = ['reporter', 'response_code'] as const;
const BUCKETS = [1, 5, 10];
/**
 * Label sets with values the exposition has to escape, one left out and one empty, and observations on, between and
 * past the bounds.
 */
const UPDATES: [Partial<Record<(typeof LABELS)[number], string>>, number][] = [
  [{ reporter: 'waypoint', response_code: '200' }, 0.5],
  [{ reporter: 'waypoint', response_code: '200' }, 5],
  [{ reporter: 'waypoint', response_code: '200' }, 7],
  [{ reporter: 'way"po\\int\n', response_code: '503' }, 11],
  [{ reporter: 'waypoint', response_code: '200' }, 1000],
  [{ reporter: 'waypoint' }, 2],
  [{ reporter: 'waypoint', response_code: '' }, 2],
];

test("a series family's exposition text is prom-client's own Counter's and Histogram's, byte for byte", async () => {
  const theirs = new MetricsRegistry();
  const counter = new Counter({ name: 'x_total', help: 'h', labelNames: [...LABELS], registers: [theirs] });
  const histogram = new Histogram({
    name: 'x_ms',
    help: 'h',
    labelNames: [...LABELS],
    buckets: BUCKETS,
    registers: [theirs],
  });
  const ours = new MetricsRegistry();
  const c = SeriesMetric.counter(ours, 'x_total', 'h', LABELS);
  const h = SeriesMetric.histogram(ours, 'x_ms', 'h', LABELS, BUCKETS);
  for (const [labels, v] of UPDATES) {
    counter.inc(labels);
    histogram.observe(labels, v);
    c.series(labels).inc();
    h.series({ ...labels }).observe(v);
  }
  assert.equal(await ours.metrics(), await theirs.metrics());
  const json = await ours.getMetricsAsJSON();
  assert.deepEqual(
    json.map((m) => [m.name, m.type, m.values.length]),
    [
      ['x_total', 'counter', 4],
      ['x_ms', 'histogram', 24],
    ],
  );
  assert.deepEqual(json[1]!.values[2], {
    labels: { reporter: 'waypoint', response_code: '200', le: 10 },
    value: 3,
    metricName: 'x_ms_bucket',
  });
});

test('a label the family was not made with is refused, as prom-client refuses it', () => {
  const m = SeriesMetric.counter(new MetricsRegistry(), 'y_total', 'h', ['a']);
  assert.throws(() => m.series({ a: '1', b: '2' } as Record<'a', string>), /metric y_total has no label b/);
});

test('reset forgets every series, as the registry resets its metrics', async () => {
  const registry = new MetricsRegistry();
  const m = SeriesMetric.counter(registry, 'z_total', 'h', ['a']);
  m.series({ a: '1' }).inc();
  registry.resetMetrics();
  assert.equal(await registry.metrics(), '# HELP z_total h\n# TYPE z_total counter\n');
});
