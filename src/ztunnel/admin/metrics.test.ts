import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Locality, Workload } from '../state/workload.js';
import { processMetrics, trafficLabels, ZtunnelMetrics, type TrafficParties } from './metrics.js';

const workload = (name: string, locality: Locality | undefined): Workload => ({
  uid: `Kubernetes//Pod/ns/${name}`,
  workloadIps: ['10.0.0.1'],
  protocol: 'HBONE',
  networkMode: 'Standard',
  name,
  namespace: 'ns',
  trustDomain: 'cluster.local',
  serviceAccount: name,
  network: '',
  workloadName: name,
  workloadType: 'pod',
  canonicalName: name,
  canonicalRevision: 'latest',
  hostname: '',
  node: 'n1',
  nativeTunnel: false,
  authorizationPolicies: [],
  status: 'Healthy',
  clusterId: 'Kubernetes',
  locality,
  services: [],
  capacity: 1,
});
const EU = { region: 'eu-west1', zone: 'eu-west1-b', subzone: 'rack7' };
const US = { region: 'us-east1', zone: 'us-east1-a', subzone: '' };
const parties = (p: Partial<TrafficParties>): TrafficParties => ({
  reporter: 'source',
  source: undefined,
  sourceIdentity: undefined,
  destination: undefined,
  destinationService: undefined,
  mtls: true,
  ...p,
});
const LOCALITY = ['source_region', 'source_zone', 'destination_region', 'destination_zone'] as const;

/** ztunnel `src/proxy/metrics.rs` `LocalityLabels`, filled by `with_source` / `with_destination`, case by case. */
const cases: { name: string; p: TrafficParties; want: Record<(typeof LOCALITY)[number], string> | undefined }[] = [
  {
    name: "both workloads' region and zone",
    p: parties({ source: workload('a', EU), destination: workload('b', US) }),
    want: {
      source_region: 'eu-west1',
      source_zone: 'eu-west1-b',
      destination_region: 'us-east1',
      destination_zone: 'us-east1-a',
    },
  },
  {
    name: 'a workload without locality is "unknown"',
    p: parties({ source: workload('a', EU), destination: workload('b', undefined) }),
    want: {
      source_region: 'eu-west1',
      source_zone: 'eu-west1-b',
      destination_region: 'unknown',
      destination_zone: 'unknown',
    },
  },
  {
    name: 'an empty zone is "unknown", as ztunnel prints an empty value',
    p: parties({ source: workload('a', { region: 'eu-west1', zone: '', subzone: '' }) }),
    want: {
      source_region: 'eu-west1',
      source_zone: 'unknown',
      destination_region: 'unknown',
      destination_zone: 'unknown',
    },
  },
  {
    name: 'a source known only by its mTLS identity',
    p: parties({
      reporter: 'destination',
      sourceIdentity: { trustDomain: 'cluster.local', namespace: 'ns', serviceAccount: 'a' },
      destination: workload('b', US),
    }),
    want: {
      source_region: 'unknown',
      source_zone: 'unknown',
      destination_region: 'us-east1',
      destination_zone: 'us-east1-a',
    },
  },
  { name: 'neither party known: the four labels are left out', p: parties({}), want: undefined },
];

for (const c of cases) {
  test(`istio_tcp_* locality labels: ${c.name}`, () => {
    const l = trafficLabels(c.p, '-');
    if (c.want === undefined) for (const k of LOCALITY) assert.equal(k in l, false, k);
    else assert.deepEqual(Object.fromEntries(LOCALITY.map((k) => [k, l[k]])), c.want);
  });
}

test('istio_tcp_connections_opened_total is exported with the locality labels, and without them when neither party is known', async () => {
  const m = new ZtunnelMetrics('test');
  m.opened.inc(trafficLabels(parties({ source: workload('a', EU), destination: workload('b', undefined) }), '-'));
  m.opened.inc(trafficLabels(parties({ mtls: false }), '-'));
  const lines = (await m.registry.metrics())
    .split('\n')
    .filter((l) => l.startsWith('istio_tcp_connections_opened_total{'));
  assert.equal(lines.length, 2);
  assert.ok(
    lines.some((l) =>
      l.includes(
        'source_region="eu-west1",source_zone="eu-west1-b",destination_region="unknown",destination_zone="unknown"',
      ),
    ),
    lines.join('\n'),
  );
  assert.ok(
    lines.some((l) => !l.includes('_region=')),
    lines.join('\n'),
  );
});

const metricNames = async (m: ZtunnelMetrics): Promise<string[]> =>
  (await m.registry.getMetricsAsJSON()).map((x) => x.name);

test("ztunnel's process metrics are process_open_fds and process_max_fds, as ztunnel src/metrics/process.rs exports, and no Node.js runtime metric", async () => {
  const names = await metricNames(new ZtunnelMetrics('test', await processMetrics(false)));
  assert.ok(names.includes('process_open_fds') && names.includes('process_max_fds'), names.join(' '));
  assert.deepEqual(
    names.filter((n) => n.startsWith('nodejs_') || (n.startsWith('process_') && !n.endsWith('_fds'))),
    [],
  );
  const text = await new ZtunnelMetrics('test').registry.metrics();
  assert.match(text, /^process_open_fds [1-9]\d*$/m);
  assert.match(text, /^process_max_fds [1-9]\d*$/m);
});

test("--node-metrics adds prom-client's default Node.js metrics to ztunnel's own", async () => {
  const names = await metricNames(new ZtunnelMetrics('test', await processMetrics(true)));
  for (const n of [
    'process_open_fds',
    'process_max_fds',
    'process_cpu_seconds_total',
    'process_resident_memory_bytes',
    'nodejs_heap_size_used_bytes',
    'nodejs_eventloop_lag_seconds',
    'istio_build',
  ]) {
    assert.ok(names.includes(n), n);
  }
});
