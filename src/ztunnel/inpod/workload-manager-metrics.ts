/**
 * ztunnel's in-pod workload manager metrics (ztunnel `src/inpod/metrics.rs`, registered by `src/app.rs` under the
 * `workload_manager` prefix of the root registry, not under `istio`): how many pods have a running proxy and how
 * many wait for a retry, as gauges, and how many proxies were started and stopped, as counters (`_total`, as the
 * Rust client names counters). None has labels.
 */
import { Counter, Gauge, type MetricsRegistry } from '../admin/prom-client-core.js';

/** What the gauges read when scraped: the state manager's current counts. */
export interface ProxyCounts {
  readonly active: () => number;
  readonly pending: () => number;
}

export class WorkloadManagerMetrics {
  readonly proxiesStarted: Counter;
  readonly proxiesStopped: Counter;

  constructor(registry: MetricsRegistry, counts: ProxyCounts) {
    const registers = [registry];
    new Gauge({
      name: 'workload_manager_active_proxy_count',
      help: 'The total number current workloads with active proxies (unstable)',
      registers,
      collect(): void {
        this.set(counts.active());
      },
    });
    new Gauge({
      name: 'workload_manager_pending_proxy_count',
      help: 'The total number current workloads with pending proxies (unstable)',
      registers,
      collect(): void {
        this.set(counts.pending());
      },
    });
    this.proxiesStarted = new Counter({
      name: 'workload_manager_proxies_started_total',
      help: 'The total number of proxies that were started (unstable)',
      registers,
    });
    this.proxiesStopped = new Counter({
      name: 'workload_manager_proxies_stopped_total',
      help: 'The total number of proxies that were stopped (unstable)',
      registers,
    });
  }
}
