import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MeshError } from '../lib/errors.js';
import { loadZtunnelConfig } from './config.js';

const LOCAL = { LOCAL_XDS_PATH: 'mesh.yaml', NODE_NAME: 'node1' };
const load = (env: Record<string, string>, flags = {}): ReturnType<typeof loadZtunnelConfig> => loadZtunnelConfig(flags, { ...LOCAL, ...env });
const configError = (env: Record<string, string>, message: RegExp): void => {
  assert.throws(() => load(env), (e: unknown) => e instanceof MeshError && e.code === 'AMESH_ERR_CONFIG' && message.test(e.message));
};

test('config: the issue contract (LOCAL_XDS_PATH, NODE_NAME, flags) with Istio defaults, frozen', () => {
  const c = load({}, { localCa: 'ca', adminAddress: '127.0.0.1:15000' });
  assert.equal(c.localXdsPath, 'mesh.yaml');
  assert.equal(c.nodeName, 'node1');
  assert.equal(c.localCaDir, 'ca');
  assert.equal(c.trustDomain, 'cluster.local');
  assert.equal(c.clusterId, 'Kubernetes');
  assert.equal(c.poolMaxStreamsPerConnection, 100);
  assert.equal(c.poolUnusedReleaseTimeoutMs, 300_000);
  assert.equal(c.connectionTerminationDeadlineMs, 5_000);
  assert.deepEqual([c.metricsAddress.port, c.readinessAddress.port], [15020, 15021]);
  assert.ok(Object.isFrozen(c));
  // --local-config is the same as LOCAL_XDS_PATH, and wins over it.
  assert.equal(loadZtunnelConfig({ localConfig: 'other.yaml' }, LOCAL).localXdsPath, 'other.yaml');
});

test('config: TERMINATION_GRACE_PERIOD_SECONDS gives the drain deadline as ztunnel derives it', () => {
  assert.equal(load({ TERMINATION_GRACE_PERIOD_SECONDS: '30' }).connectionTerminationDeadlineMs, 25_000);
  assert.equal(load({ TERMINATION_GRACE_PERIOD_SECONDS: '5' }).connectionTerminationDeadlineMs, 4_000);
  assert.equal(load({ TERMINATION_GRACE_PERIOD_SECONDS: '30', CONNECTION_TERMINATION_DEADLINE: '2s' }).connectionTerminationDeadlineMs, 2_000);
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
  assert.equal(load({ TRUST_DOMAIN: '' }).trustDomain, 'cluster.local', 'empty is unset');
});
