/**
 * A counter or histogram family for metrics updated on every request: each label set's series is made once
 * (`series`) and then updated as plain numbers, and the family is exported through prom-client's registry in the
 * very form prom-client's own Counter and Histogram give it (`registerMetric`, `get`, `getForPromString`), so the
 * exposition text is prom-client's. Written here rather than taken from prom-client because its Counter and
 * Histogram check and hash every label of a series on each update, even through a child from `labels()`: for the
 * waypoint's four request metrics of 27 labels that was ~8% of its CPU per request (docs/performance.md).
 */
import type { MetricsRegistry } from '../ztunnel/admin/prom-client-core.js';

/** One exported line, as prom-client's metrics give theirs to its registry. */
interface ExportedValue {
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
  readonly metricName?: string;
  /** The series' labels, kept apart from the line's own (`le`) for the text exposition. */
  readonly sharedLabels?: Readonly<Record<string, string | undefined>>;
}

/** A family, as prom-client's metrics give it to its registry. */
interface ExportedMetric {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly values: ExportedValue[];
  readonly aggregator: 'sum';
}

/** One label set's figures: a counter's value, or a histogram's sum, count and per-bucket (not cumulative) counts. */
export class Series<L extends string> {
  value = 0;
  count = 0;
  readonly buckets: Float64Array;

  constructor(
    readonly labels: Readonly<Partial<Record<L, string>>>,
    private readonly bounds: readonly number[],
  ) {
    this.buckets = new Float64Array(bounds.length);
  }

  inc(by = 1): void {
    this.value += by;
  }

  /** Counts `v` in the first bucket whose bound is at or above it (above all of them: only in `+Inf`). */
  observe(v: number): void {
    this.value += v;
    this.count++;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++)
      if (v <= b[i]!) {
        this.buckets[i]!++;
        return;
      }
  }
}

export class SeriesMetric<L extends string> {
  readonly aggregator = 'sum';
  private readonly all = new Map<string, Series<L>>();

  private constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'histogram',
    private readonly labelNames: readonly L[],
    private readonly bounds: readonly number[],
  ) {}

  static counter<L extends string>(
    registry: MetricsRegistry,
    name: string,
    help: string,
    labelNames: readonly L[],
  ): SeriesMetric<L> {
    return new SeriesMetric(name, help, 'counter', labelNames, []).register(registry);
  }

  static histogram<L extends string>(
    registry: MetricsRegistry,
    name: string,
    help: string,
    labelNames: readonly L[],
    buckets: readonly number[],
  ): SeriesMetric<L> {
    return new SeriesMetric(name, help, 'histogram', labelNames, [...buckets]).register(registry);
  }

  private register(registry: MetricsRegistry): this {
    // The registry reads a metric only through name, get(), getForPromString() and reset().
    registry.registerMetric(this as unknown as Parameters<MetricsRegistry['registerMetric']>[0]);
    return this;
  }

  /**
   * The series of `labels` (only the family's labels, as prom-client requires; one left out is not exported), made on first
   * use; callers keep it rather than asking per update.
   */
  series(labels: Readonly<Partial<Record<L, string>>>): Series<L> {
    // A label left out is not exported, unlike one that is empty.
    const key = this.labelNames.map((n) => labels[n] ?? '\u0001').join('\u0000');
    let s = this.all.get(key);
    if (s === undefined) {
      for (const n of Object.keys(labels))
        if (!(this.labelNames as readonly string[]).includes(n))
          throw new Error(`metric ${this.name} has no label ${n}`);
      s = new Series(Object.freeze({ ...labels }), this.bounds);
      this.all.set(key, s);
    }
    return s;
  }

  reset(): void {
    this.all.clear();
  }

  /** prom-client's JSON form: each line with all its labels. */
  get(): Promise<ExportedMetric> {
    return Promise.resolve(this.export(false));
  }

  /** prom-client's form for its text exposition: a histogram line's own `le` apart from the series' labels. */
  getForPromString(): Promise<ExportedMetric> {
    return Promise.resolve(this.export(true));
  }

  private export(shared: boolean): ExportedMetric {
    const values: ExportedValue[] = [];
    const line = (s: Series<L>, own: Record<string, string | number>, value: number, metricName?: string): void => {
      values.push(
        shared
          ? { labels: own, value, metricName, sharedLabels: s.labels }
          : { labels: { ...s.labels, ...own }, value, metricName },
      );
    };
    for (const s of this.all.values()) {
      if (this.type === 'counter') {
        line(s, {}, s.value);
        continue;
      }
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += s.buckets[i]!;
        line(s, { le }, cumulative, `${this.name}_bucket`);
      });
      line(s, { le: '+Inf' }, s.count, `${this.name}_bucket`);
      line(s, {}, s.value, `${this.name}_sum`);
      line(s, {}, s.count, `${this.name}_count`);
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}
