/**
 * What `amesh ztunnel` loads: a node proxy's memory carries no control-plane code, so an idle one stays small
 * (docs/performance.md, "Idle ztunnel: what it loads"). The CLI imports a command's module only when that command
 * runs, so the graphs below are what the process loads.
 */
import { mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { importGraph } from './helpers/import-graph.js';
import { meshFixture, waitFor } from './helpers/mesh-fixture.js';
import { CapturedLogs } from './helpers/captured-logs.js';

/** Code and packages only istiod, the API server, the controllers, the node agent or `amesh up` use. */
const CONTROL_PLANE_DIRS = ['src/istiod/', 'src/apiserver/', 'src/controllers/', 'src/up/', 'src/kube/', 'src/cni/'];
const CONTROL_PLANE_PACKAGES = ['@kubernetes/client-node', 'lmdb', 'jose'];

function assertNoControlPlane(entry: string): void {
  const g = importGraph(entry);
  assert.deepEqual(
    [...g.files].filter((f) => CONTROL_PLANE_DIRS.some((d) => f.startsWith(d))),
    [],
    `${entry} loads control-plane modules`,
  );
  assert.deepEqual(
    CONTROL_PLANE_PACKAGES.filter((p) => g.packages.has(p)).map((p) => `${p} (from ${g.packages.get(p) ?? ''})`),
    [],
    `${entry} loads control-plane packages`,
  );
}

test('the amesh CLI entry point loads no command at start: each is imported when it runs', () => {
  const g = importGraph('src/cli/main.ts');
  assert.deepEqual([...g.files].sort(), ['src/cli/main.ts', 'src/lib/package-root.ts', 'src/lib/version.ts']);
});

test('amesh ztunnel loads none of istiod, the API server, the controllers, amesh up or the Kubernetes client', () => {
  assertNoControlPlane('src/cli/ztunnel.ts');
});

/**
 * What only one mode uses, imported when that mode starts: istiod's xDS and CA clients (gRPC, the generated
 * protobuf code), the LOCAL_XDS_PATH reader (YAML), in-pod mode (ZDS, the native addon, the DNS proxy), and the
 * local CA (the X.509 library; a ztunnel's own CSRs need none).
 */
const MODE_DIRS = [
  'src/api/',
  'src/ztunnel/xds/',
  'src/ztunnel/inpod/',
  'src/lib/grpc-',
  'src/ztunnel/grpc-channel',
  'src/ztunnel/state/local-config',
  'src/ztunnel/identity/istio-ca-client',
  'src/ztunnel/dns/dns-proxy',
  'src/ztunnel/dns/dns-forwarder',
  'src/lib/pki/x509',
  'src/lib/pki/certificate-authority',
];
const MODE_PACKAGES = ['@grpc/grpc-js', '@bufbuild/protobuf', 'yaml', 'dns-packet', '@peculiar/x509'];

test('amesh ztunnel imports gRPC, protobuf, YAML, ZDS, the DNS proxy and the local CA only when its mode uses them', () => {
  const g = importGraph('src/cli/ztunnel.ts');
  assert.deepEqual(
    [...g.files].filter((f) => MODE_DIRS.some((d) => f.startsWith(d))),
    [],
    'modules every mode loads at start',
  );
  assert.deepEqual(
    MODE_PACKAGES.filter((p) => g.packages.has(p)).map((p) => `${p} (from ${g.packages.get(p) ?? ''})`),
    [],
    'packages every mode loads at start',
  );
});

test('the local CA signs and a ztunnel makes its CSRs without the X.509 library (only generating a CA loads it)', () => {
  for (const entry of [
    'src/lib/pki/certificate-authority.ts',
    'src/lib/pki/csr.ts',
    'src/ztunnel/identity/local-ca-client.ts',
  ]) {
    const g = importGraph(entry);
    assert.deepEqual(
      ['@peculiar/x509', 'reflect-metadata']
        .filter((p) => g.packages.has(p))
        .map((p) => `${p} (from ${g.packages.get(p) ?? ''})`),
      [],
      entry,
    );
  }
});

/** prom-client's index, and what only its default Node.js metrics load. */
const PROM_CLIENT_INDEX = /node_modules\/(prom-client\/index\.js|@opentelemetry\/)/;

test("ztunnel's metrics load prom-client's metric classes, not its index, default metrics or @opentelemetry/api (only --node-metrics does)", async () => {
  assert.equal(
    importGraph('src/cli/ztunnel.ts').packages.get('prom-client'),
    undefined,
    'a module amesh ztunnel loads imports prom-client',
  );
  const loaded = (): string[] =>
    Object.keys(createRequire(import.meta.url).cache).filter((f) => PROM_CLIENT_INDEX.test(f));
  const { processMetrics, ZtunnelMetrics } = await import('../src/ztunnel/admin/metrics.js');
  await new ZtunnelMetrics('test', await processMetrics(false)).registry.metrics();
  assert.deepEqual(loaded(), []);
  await processMetrics(true);
  assert.notDeepEqual(loaded(), [], '--node-metrics loads them');
});

const WORKLOAD_IP = '127.113.0.21';
const CONTROL_IP = '127.113.0.20';

test('a local-mode ztunnel starts without ICU collation (localeCompare loads its data: ~2.4 MiB of idle RSS)', async (t) => {
  const fx = await meshFixture();
  t.after(() => fx.cleanup());
  await fx.write(
    'mesh.yaml',
    `workloads:\n- {uid: a, name: a, namespace: ns, serviceAccount: a, workloadIps: [${WORKLOAD_IP}], protocol: HBONE, node: n1}\n`,
  );
  const { loadZtunnelConfig } = await import('../src/ztunnel/config.js');
  const { Ztunnel } = await import('../src/ztunnel/ztunnel.js');
  const collations = mock.method(String.prototype, 'localeCompare');
  t.after(() => collations.mock.restore());
  const control = `${CONTROL_IP}:0`;
  const env = {
    NODE_NAME: 'n1',
    ISTIO_META_CLUSTER_ID: 'c1',
    ISTIO_METAJSON_LABELS: '{}',
    XDS_HEADER_A: 'a',
    XDS_HEADER_B: 'b',
    CA_HEADER_A: 'a',
    CA_HEADER_B: 'b',
  };
  const cfg = loadZtunnelConfig(
    {
      localConfig: fx.file('mesh.yaml'),
      localCa: fx.ca,
      adminAddress: control,
      metricsAddress: control,
      readinessAddress: control,
    },
    env,
  );
  const zt = await Ztunnel.start(cfg, new CapturedLogs('ztunnel').control);
  t.after(() => zt.shutdown());
  await waitFor('workload proxies up', () => zt.pending().length === 0, 10_000);
  assert.equal(collations.mock.callCount(), 0);
});
