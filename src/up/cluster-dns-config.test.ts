import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { loadClusterDnsConfig } from './cluster-dns-config.js';

test("defaults are CoreDNS's as kubeadm deploys it: :53, ready 8181, health 8080, metrics 9153, cluster.local", () => {
  const c = loadClusterDnsConfig({}, {});
  assert.deepEqual(c, {
    listen: { host: '0.0.0.0', port: 53 },
    kubeconfig: undefined,
    clusterDomain: 'cluster.local',
    resolvConf: '/etc/resolv.conf',
    readyPort: 8181,
    healthPort: 8080,
    metricsPort: 9153,
    logLevel: 'info',
    logFormat: 'text',
  });
  assert.ok(Object.isFrozen(c));
});

test('flags are parsed once: listen address, domain (lowercased, trailing dot dropped), ports, log level', () => {
  const c = loadClusterDnsConfig(
    {
      listen: '127.0.0.1:0',
      clusterDomain: 'Corp.Internal.',
      readyPort: '0',
      healthPort: '18080',
      metricsPort: '19153',
      logLevel: 'debug,informers=warn',
      kubeconfig: '/k',
      resolvConf: '/r',
    },
    { LOG_FORMAT: 'json' },
  );
  assert.deepEqual(c.listen, { host: '127.0.0.1', port: 0 });
  assert.equal(c.clusterDomain, 'corp.internal');
  assert.deepEqual([c.readyPort, c.healthPort, c.metricsPort], [0, 18080, 19153]);
  assert.equal(c.logFormat, 'json');
});

test('a bad flag is AMESH_ERR_CONFIG naming it', () => {
  for (const [flags, flag] of [
    [{ listen: 'nowhere' }, '--listen'],
    [{ clusterDomain: 'bad_domain' }, '--cluster-domain'],
    [{ clusterDomain: '' }, '--cluster-domain'],
    [{ readyPort: '70000' }, '--ready-port'],
    [{ healthPort: 'x' }, '--health-port'],
    [{ metricsPort: '-1' }, '--metrics-port'],
    [{ logLevel: 'loud' }, 'log level'],
  ] as const)
    assert.throws(
      () => loadClusterDnsConfig(flags, {}),
      (e) => isMeshError(e, 'AMESH_ERR_CONFIG') && e.message.includes(flag),
      JSON.stringify(flags),
    );
});
