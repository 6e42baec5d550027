import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MeshError } from '../lib/errors.js';
import { ISTIOD_IN_CLUSTER_ADDRESS, ISTIOD_LOCAL_ADDRESS, loadZtunnelConfig, type ZtunnelConfig } from './config.js';
import { LogControl } from '../lib/log.js';

const LOCAL = { LOCAL_XDS_PATH: 'mesh.yaml', NODE_NAME: 'node1' };
const load = (env: Record<string, string>, flags = {}): ReturnType<typeof loadZtunnelConfig> =>
  loadZtunnelConfig(flags, { ...LOCAL, ...env });
const configError = (env: Record<string, string>, message: RegExp): void => {
  assert.throws(
    () => load(env),
    (e: unknown) => e instanceof MeshError && e.code === 'AMESH_ERR_CONFIG' && message.test(e.message),
  );
};

test('config: local mode (LOCAL_XDS_PATH, NODE_NAME, flags) with Istio defaults, frozen', () => {
  const c = load({}, { localCa: 'ca', adminAddress: '127.0.0.1:15000' });
  assert.equal(c.localXdsPath, 'mesh.yaml');
  assert.equal(c.nodeName, 'node1');
  assert.deepEqual(c.ca, { t: 'local', dir: 'ca' });
  assert.equal(c.xdsAddress, undefined, 'LOCAL_XDS_PATH without XDS_ADDRESS is local mode');
  assert.equal(c.enableSocks5, false, 'SOCKS5 is off unless UNSTABLE_ENABLE_SOCKS5=true');
  assert.equal(c.trustDomain, 'cluster.local');
  assert.equal(c.clusterId, 'Kubernetes');
  assert.equal(c.poolMaxStreamsPerConnection, 100);
  assert.equal(c.poolUnusedReleaseTimeoutMs, 300_000);
  assert.equal(c.connectionTerminationDeadlineMs, 5_000);
  assert.deepEqual(
    [c.hboneConnectTimeoutMs, c.hboneKeepaliveIntervalMs, c.hboneKeepaliveTimeoutMs],
    [10_000, 10_000, 20_000],
    "ztunnel's CONNECTION_TIMEOUT and its PING interval and timeout",
  );
  assert.deepEqual([c.metricsAddress.port, c.readinessAddress.port], [15020, 15021]);
  assert.ok(Object.isFrozen(c));
  // --local-config is the same as LOCAL_XDS_PATH, and wins over it.
  assert.equal(loadZtunnelConfig({ localConfig: 'other.yaml' }, LOCAL).localXdsPath, 'other.yaml');
});

test('config: TERMINATION_GRACE_PERIOD_SECONDS gives the drain deadline as ztunnel derives it', () => {
  assert.equal(load({ TERMINATION_GRACE_PERIOD_SECONDS: '30' }).connectionTerminationDeadlineMs, 25_000);
  assert.equal(load({ TERMINATION_GRACE_PERIOD_SECONDS: '5' }).connectionTerminationDeadlineMs, 4_000);
  assert.equal(
    load({ TERMINATION_GRACE_PERIOD_SECONDS: '30', CONNECTION_TERMINATION_DEADLINE: '2s' })
      .connectionTerminationDeadlineMs,
    2_000,
  );
});

test('config: PROXY_MODE is shared (default) or dedicated, which amesh refuses rather than ignores', () => {
  assert.doesNotThrow(() => load({ PROXY_MODE: 'shared' }));
  configError({ PROXY_MODE: 'dedicated' }, /PROXY_MODE=dedicated is not supported/);
  configError({ PROXY_MODE: 'sidecar' }, /PROXY_MODE: "sidecar" must be one of dedicated, shared/);
});

test('config: a bad value names the variable and says what would be accepted', () => {
  configError({ TRUST_DOMAIN: 'Cluster Local' }, /TRUST_DOMAIN: "Cluster Local" is not a SPIFFE trust domain/);
  configError({ POOL_MAX_STREAMS_PER_CONNECTION: 'abc' }, /POOL_MAX_STREAMS_PER_CONNECTION: "abc" must be an integer/);
  configError({ POOL_UNUSED_RELEASE_TIMEOUT: '5x' }, /POOL_UNUSED_RELEASE_TIMEOUT: "5x" is not a duration/);
  configError({ UNSTABLE_ENABLE_SOCKS5: 'maybe' }, /UNSTABLE_ENABLE_SOCKS5: "maybe" is not a boolean/);
  configError({ LOG_FORMAT: 'xml' }, /LOG_FORMAT: "xml" must be text or json/);
  configError({ NODE_NAME: '' }, /NODE_NAME is not set/);
  configError({ XDS_ADDRESS: 'https://istiod:15012' }, /either XDS_ADDRESS or LOCAL_XDS_PATH, not both/);
  configError({ XDS_HEADER_BAD_KEY$: 'x' }, /XDS_HEADER_BAD_KEY\$: "bad_key\$" is not an ASCII gRPC metadata key/);
  configError({ CA_HEADER_X: 'caf\u00e9' }, /CA_HEADER_X: the value must be printable ASCII/);
  configError({ ISTIO_METAJSON_LABELS: '{nope' }, /ISTIO_METAJSON_LABELS: not JSON/);
  configError({ RUST_LOG: 'info,xds=loud' }, /unknown log level "loud"/);
  assert.equal(load({ TRUST_DOMAIN: '' }).trustDomain, 'cluster.local', 'empty is unset');
});

/** Env for a ztunnel that talks to istiod: no LOCAL_XDS_PATH. */
const ISTIOD = { NODE_NAME: 'node1' };
const sourcesOf = (
  env: Record<string, string>,
  flags = {},
): Pick<ZtunnelConfig, 'localXdsPath' | 'xdsAddress' | 'ca'> => {
  const c = loadZtunnelConfig(flags, env);
  return { localXdsPath: c.localXdsPath, xdsAddress: c.xdsAddress, ca: c.ca };
};

test('config: XDS_ADDRESS and CA_ADDRESS default to istiod each on its own, as ztunnel src/config.rs; local mode stays one step', () => {
  const rows: [string, Record<string, string>, Record<string, string>, ReturnType<typeof sourcesOf>][] = [
    [
      'nothing set, outside Kubernetes',
      ISTIOD,
      {},
      { localXdsPath: undefined, xdsAddress: ISTIOD_LOCAL_ADDRESS, ca: { t: 'istiod', address: ISTIOD_LOCAL_ADDRESS } },
    ],
    [
      'nothing set, in a pod',
      { ...ISTIOD, KUBERNETES_SERVICE_HOST: '10.96.0.1' },
      {},
      {
        localXdsPath: undefined,
        xdsAddress: ISTIOD_IN_CLUSTER_ADDRESS,
        ca: { t: 'istiod', address: ISTIOD_IN_CLUSTER_ADDRESS },
      },
    ],
    [
      'XDS_ADDRESS does not move the CA',
      { ...ISTIOD, XDS_ADDRESS: 'https://127.0.0.1:15012' },
      {},
      {
        localXdsPath: undefined,
        xdsAddress: 'https://127.0.0.1:15012',
        ca: { t: 'istiod', address: ISTIOD_LOCAL_ADDRESS },
      },
    ],
    [
      'both given, scheme defaulted to https',
      { ...ISTIOD, XDS_ADDRESS: 'a:15012', CA_ADDRESS: 'b:15012' },
      {},
      { localXdsPath: undefined, xdsAddress: 'https://a:15012', ca: { t: 'istiod', address: 'https://b:15012' } },
    ],
    [
      'istiod for config, plug-in CA files for certificates',
      { ...ISTIOD, XDS_ADDRESS: 'https://a:15012' },
      { localCa: 'dir' },
      { localXdsPath: undefined, xdsAddress: 'https://a:15012', ca: { t: 'local', dir: 'dir' } },
    ],
    [
      "local config and plug-in CA (the README's local mode)",
      { ...ISTIOD, LOCAL_XDS_PATH: 'm.yaml' },
      { localCa: 'dir' },
      { localXdsPath: 'm.yaml', xdsAddress: undefined, ca: { t: 'local', dir: 'dir' } },
    ],
    [
      'local config, certificates from istiod',
      { ...ISTIOD, LOCAL_XDS_PATH: 'm.yaml' },
      {},
      { localXdsPath: 'm.yaml', xdsAddress: undefined, ca: { t: 'istiod', address: ISTIOD_LOCAL_ADDRESS } },
    ],
    [
      'XDS_ADDRESS="" with local config, as ztunnel\'s Development.md runs it',
      { ...ISTIOD, XDS_ADDRESS: '', LOCAL_XDS_PATH: 'm.yaml', FAKE_CA: 'true' },
      {},
      { localXdsPath: 'm.yaml', xdsAddress: undefined, ca: { t: 'fake' } },
    ],
  ];
  for (const [what, env, flags, want] of rows) assert.deepEqual(sourcesOf(env, flags), want, what);
  const bad: [Record<string, string>, Record<string, string>, RegExp][] = [
    [{ ...ISTIOD, XDS_ADDRESS: '' }, {}, /no configuration source: XDS_ADDRESS is empty/],
    [{ ...ISTIOD, CA_ADDRESS: '' }, {}, /CA_ADDRESS is empty/],
    [{ ...ISTIOD, CA_ADDRESS: 'https://b:15012' }, { localCa: 'dir' }, /--local-ca replaces the CA/],
    [{ ...ISTIOD, FAKE_CA: 'true' }, { localCa: 'dir' }, /--local-ca replaces the CA/],
  ];
  for (const [env, flags, message] of bad) {
    assert.throws(
      () => loadZtunnelConfig(flags, env),
      (e: unknown) => e instanceof MeshError && e.code === 'AMESH_ERR_CONFIG' && message.test(e.message),
      message.source,
    );
  }
});

test('config: root CA defaults, XDS_HEADER_*/CA_HEADER_* as gRPC metadata and ISTIO_META_* as node metadata', () => {
  const rows: [string, Record<string, string>, Partial<ZtunnelConfig>][] = [
    [
      'defaults: both roots from the mounted file, nothing extra',
      {},
      {
        xdsRootCa: './var/run/secrets/istio/root-cert.pem',
        caRootCa: './var/run/secrets/istio/root-cert.pem',
        xdsHeaders: [],
        caHeaders: [],
        nodeMetadata: {},
      },
    ],
    [
      'XDS_ROOT_CA does not move CA_ROOT_CA',
      { XDS_ROOT_CA: '/x.pem' },
      { xdsRootCa: '/x.pem', caRootCa: './var/run/secrets/istio/root-cert.pem' },
    ],
    [
      'SYSTEM passes through',
      { XDS_ROOT_CA: 'SYSTEM', CA_ROOT_CA: 'SYSTEM' },
      { xdsRootCa: 'SYSTEM', caRootCa: 'SYSTEM' },
    ],
    [
      'headers: prefix stripped, key lowercased, each prefix to its own channel',
      { XDS_HEADER_X_TENANT: 'a', CA_HEADER_X_TENANT: 'b', CA_HEADER_Token: 't' },
      {
        xdsHeaders: [['x_tenant', 'a']],
        caHeaders: [
          ['token', 't'],
          ['x_tenant', 'b'],
        ],
      },
    ],
    [
      'node metadata: ISTIO_META_* as strings, ISTIO_METAJSON_* parsed',
      { ISTIO_META_CLUSTER_ID: 'c1', ISTIO_META_DNS_CAPTURE: 'true', ISTIO_METAJSON_LABELS: '{"app":"x","n":2}' },
      { nodeMetadata: { CLUSTER_ID: 'c1', DNS_CAPTURE: 'true', LABELS: { app: 'x', n: 2 } }, clusterId: 'c1' },
    ],
    [
      'node metadata: ISTIO_METAJSON_<K> wins over ISTIO_META_<K>',
      { ISTIO_METAJSON_LABELS: '{"app":"x"}', ISTIO_META_LABELS: 'y' },
      { nodeMetadata: { LABELS: { app: 'x' } } },
    ],
  ];
  for (const [what, env, want] of rows) {
    const c = load(env);
    for (const [k, v] of Object.entries(want)) assert.deepEqual(c[k as keyof ZtunnelConfig], v, `${what}: ${k}`);
  }
});

test('config: scoped log levels from RUST_LOG and --log-level start ztunnel (they used to exit at startup)', () => {
  const rows: [string, Record<string, string>, { logLevel?: string }, Record<string, string>][] = [
    ['RUST_LOG with a default and a scope', { RUST_LOG: 'info,xds=debug' }, {}, { xds: 'debug', proxy: 'info' }],
    [
      '--log-level wins over RUST_LOG',
      { RUST_LOG: 'error' },
      { logLevel: 'info,ads=debug' },
      { ads: 'debug', xds: 'info' },
    ],
    [
      'ztunnel module paths name the same scopes',
      { RUST_LOG: 'warn,ztunnel::xds=trace' },
      {},
      { xds: 'trace', access: 'warn' },
    ],
    [
      'a parent target covers nested scopes; the most specific wins',
      { RUST_LOG: 'info,proxy=warn,proxy::pool=debug' },
      {},
      { 'proxy::inbound': 'warn', 'proxy::pool': 'debug', pool: 'info' },
    ],
    ['off is silent', { RUST_LOG: 'off,access=info' }, {}, { access: 'info', xds: 'silent' }],
  ];
  for (const [what, env, flags, want] of rows) {
    const c = load(env, flags);
    const logs = new LogControl({
      format: 'json',
      level: c.logLevel,
      component: 't',
      out: { write: () => true } as unknown as NodeJS.WritableStream,
    });
    for (const [scope, level] of Object.entries(want))
      assert.equal(logs.scope(scope).level, level, `${what}: ${scope}`);
  }
});

test("config: INPOD_ENABLED turns on in-pod mode with ztunnel's INPOD_UDS, PACKET_MARK (0x539), INPOD_PORT_REUSE and the DNS proxy", () => {
  assert.equal(load({}).inpod, undefined, 'local mode unless INPOD_ENABLED=true');
  assert.deepEqual(load({ INPOD_ENABLED: 'true' }).inpod, {
    uds: '/var/run/ztunnel/ztunnel.sock',
    mark: 0x539,
    portReuse: true,
  });
  assert.deepEqual(
    load({ INPOD_ENABLED: 'true', INPOD_UDS: '/tmp/z.sock', PACKET_MARK: '4096', INPOD_PORT_REUSE: 'false' }).inpod,
    { uds: '/tmp/z.sock', mark: 4096, portReuse: false },
  );
  assert.equal(load({}).ipv6Enabled, true);
  assert.equal(load({ IPV6_ENABLED: 'false' }).ipv6Enabled, false);
  configError({ INPOD_ENABLED: 'true', PACKET_MARK: '0x' }, /PACKET_MARK/);
  assert.equal(load({}).dnsProxy, true, "ztunnel's DNS proxy is on unless DNS_CAPTURE metadata says otherwise");
  assert.equal(load({ ISTIO_META_DNS_CAPTURE: 'false' }).dnsProxy, false);
  assert.equal(load({ CLUSTER_DOMAIN: 'corp.example' }).clusterDomain, 'corp.example');
  configError({ INPOD_ENABLED: 'yes please' }, /INPOD_ENABLED/);
});
