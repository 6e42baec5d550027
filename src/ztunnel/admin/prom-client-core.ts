/**
 * prom-client's metric classes, each required from its own module instead of the package's index. The index also
 * loads what a ztunnel never uses: its default Node metrics (which pull in @opentelemetry/api, 33 modules), the
 * Pushgateway (node:http, https, zlib), the cluster aggregator and Summary's t-digest. They would add ~2.3 MiB to
 * an idle ztunnel's RSS (docs/performance.md, "Idle ztunnel: prom-client's index and ICU collation"). These are the
 * very classes the index exports (Node caches each module once), so a registry made here and one made from
 * `prom-client` mix freely; prom-client's `Registry` is exported as `MetricsRegistry`, the name amesh uses for
 * it. `require` rather than `import`: the package declares types for its index only, and Node's ESM loader would
 * lex each CommonJS file for its exports, which costs more memory than the index does. prom-client's version is
 * pinned; prom-client-core.test.ts checks the paths.
 */
import { createRequire } from 'node:module';
import type * as prom from 'prom-client';

const require = createRequire(import.meta.url);

export const MetricsRegistry = require('prom-client/lib/registry.js') as typeof prom.Registry;
export type MetricsRegistry = prom.Registry;
export const Counter = require('prom-client/lib/counter.js') as typeof prom.Counter;
export type Counter<T extends string = string> = prom.Counter<T>;
export const Gauge = require('prom-client/lib/gauge.js') as typeof prom.Gauge;
export type Gauge<T extends string = string> = prom.Gauge<T>;
export const Histogram = require('prom-client/lib/histogram.js') as typeof prom.Histogram;
export type Histogram<T extends string = string> = prom.Histogram<T>;

type ProcessMetric = (registry: prom.Registry) => void;
/**
 * The process metrics ztunnel exports (ztunnel `src/metrics/process.rs`): `process_open_fds` and `process_max_fds`,
 * as prom-client's own default-metric modules define them.
 */
export function registerProcessFdMetrics(registry: prom.Registry): void {
  (require('prom-client/lib/metrics/processOpenFileDescriptors.js') as ProcessMetric)(registry);
  (require('prom-client/lib/metrics/processMaxFileDescriptors.js') as ProcessMetric)(registry);
}
