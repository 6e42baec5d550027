import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from './api-error.js';
import type { KubeObject } from './kube-object.js';
import { NODE_PORT_RANGE, NodePortAllocator } from './node-port-allocator.js';

const svc = (name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'default' },
  spec,
});
const ports = (s: KubeObject): unknown[] =>
  ((s.spec as { ports: { nodePort?: number }[] }).ports ?? []).map((p) => p.nodePort);

test('NodePort and LoadBalancer Services get a free node port per port from the range; ClusterIP and LoadBalancers that opt out get none', () => {
  const a = new NodePortAllocator();
  const np = svc('np', { type: 'NodePort', ports: [{ port: 80 }, { port: 443 }] });
  a.allocate(np);
  const [p1, p2] = ports(np) as number[];
  for (const p of [p1!, p2!]) assert.ok(p >= NODE_PORT_RANGE.first && p <= NODE_PORT_RANGE.last, String(p));
  assert.notEqual(p1, p2);
  const lb = svc('lb', { type: 'LoadBalancer', ports: [{ port: 80 }] });
  a.allocate(lb);
  assert.equal(typeof ports(lb)[0], 'number');
  const optOut = svc('lb2', { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false, ports: [{ port: 80 }] });
  const cluster = svc('c', { type: 'ClusterIP', ports: [{ port: 80 }] });
  a.allocate(optOut);
  a.allocate(cluster);
  assert.deepEqual([...ports(optOut), ...ports(cluster)], [undefined, undefined]);
});

test("a named node port is honoured when free and in range, else refused with the API server's 422, taking nothing", () => {
  const a = new NodePortAllocator();
  a.allocate(svc('first', { type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] }));
  const refused = (s: KubeObject): string => {
    try {
      a.allocate(s);
    } catch (e) {
      assert.ok(e instanceof ApiError && e.reason === 'Invalid');
      return e.message;
    }
    return assert.fail('allocated');
  };
  assert.match(
    refused(svc('taken', { type: 'NodePort', ports: [{ port: 81 }, { port: 80, nodePort: 30080 }] })),
    /spec\.ports\[1\]\.nodePort: Invalid value: 30080: provided port is already allocated/,
  );
  assert.match(
    refused(svc('out', { type: 'NodePort', ports: [{ port: 80, nodePort: 8080 }] })),
    /provided port is not in the valid range\. The range of valid ports is 30000-32767/,
  );
  const again = svc('again', { type: 'NodePort', ports: [{ port: 80, nodePort: 30081 }] });
  a.allocate(again);
  assert.deepEqual(ports(again), [30081], 'the refused Service took nothing');
});

test('an update keeps its ports, allocates the new ones and gives back the dropped ones; a delete gives back all', () => {
  const a = new NodePortAllocator();
  const old = svc('web', {
    type: 'NodePort',
    ports: [
      { port: 80, nodePort: 30080 },
      { port: 81, nodePort: 30081 },
    ],
  });
  a.allocate(old);
  const next = svc('web', { type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }, { port: 82 }] });
  a.update(next, old);
  assert.equal(ports(next)[0], 30080);
  a.allocate(svc('reuse', { type: 'NodePort', ports: [{ port: 1, nodePort: 30081 }] }));
  a.release(next);
  a.allocate(svc('reuse2', { type: 'NodePort', ports: [{ port: 1, nodePort: 30080 }] }));
});
