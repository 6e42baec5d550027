import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { addressInCidr, loadUpConfig } from './up-config.js';
import { nodeRecord } from './node.js';

test('amesh up defaults: two nodes on 10.240.0.0/24 behind the host at .1, one /24 of 10.244.0.0/16 each', () => {
  const cfg = loadUpConfig({}, {});
  assert.equal(cfg.nodes, 2);
  assert.equal(cfg.hostIp, '10.240.0.1');
  assert.deepEqual(nodeRecord(cfg, 1), {
    name: 'node1',
    netns: 'amesh-node1',
    ip: '10.240.0.2',
    podCidr: '10.244.0.0/24',
  });
  assert.deepEqual(nodeRecord(cfg, 2), {
    name: 'node2',
    netns: 'amesh-node2',
    ip: '10.240.0.3',
    podCidr: '10.244.1.0/24',
  });
  assert.ok(Object.isFrozen(cfg));
});

test('addressInCidr carries across octets', () => {
  assert.equal(addressInCidr('10.240.0.0/16', 257), '10.240.1.1');
});

test('amesh up refuses names that would make interface names longer than 15 bytes, node counts out of range, and a node CIDR too small', () => {
  const refused = (flags: Parameters<typeof loadUpConfig>[0]): void =>
    assert.throws(
      () => loadUpConfig(flags, {}),
      (e) => isMeshError(e, 'AMESH_ERR_CONFIG'),
    );
  refused({ name: 'averylongname' });
  refused({ name: 'Upper' });
  refused({ nodes: '0' });
  refused({ nodes: '65' });
  refused({ nodes: 'two' });
  refused({ nodeCidr: '10.240.0.0/30', nodes: '2' });
  refused({ nodeCidr: 'fd00::/64' });
  refused({ output: 'wide' });
  refused({ dataplane: 'sidecar' });
  refused({ wait: '-1' });
});

test("--lb-pool: the node network's upper half by default; a range must sit above the nodes' addresses", () => {
  assert.deepEqual(loadUpConfig({}, {}).lbPool, { first: '10.240.0.128', last: '10.240.0.254' });
  assert.deepEqual(loadUpConfig({ lbPool: '10.240.0.10-10.240.0.20' }, {}).lbPool, {
    first: '10.240.0.10',
    last: '10.240.0.20',
  });
  for (const bad of ['10.240.0.3-10.240.0.9', '10.240.0.20-10.240.0.10', '10.241.0.10-10.241.0.20', '10.240.0.10'])
    assert.throws(
      () => loadUpConfig({ lbPool: bad }, {}),
      (e: unknown) => isMeshError(e) && e.message.startsWith(`--lb-pool: "${bad}" must be FIRST-LAST`),
      bad,
    );
});
