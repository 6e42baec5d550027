import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { ApiError } from './api-error.js';
import { ClusterIpAllocator, DEFAULT_SERVICE_CIDR } from './cluster-ip-allocator.js';
import type { KubeObject } from './kube-object.js';
import { serviceStrategy } from './strategies/service.js';

function svc(name: string, spec: Record<string, unknown> = {}, namespace = 'default'): KubeObject {
  const s: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { selector: { app: name }, ports: [{ port: 80 }], ...spec },
  };
  serviceStrategy.prepareForCreate!(s);
  return s;
}

function specOf(s: KubeObject): Record<string, unknown> {
  return s.spec as Record<string, unknown>;
}

function refusal(f: () => void): [string | undefined, string][] {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof ApiError);
    assert.equal(e.code, 422);
    return (e.details?.causes ?? []).map((c) => [c.field, c.message]);
  }
  assert.fail('not refused');
}

test('a new Service gets a free address of 10.96.0.0/16 outside the low band, single-stack IPv4', () => {
  const a = new ClusterIpAllocator();
  assert.equal(a.cidr, DEFAULT_SERVICE_CIDR);
  const seen = new Set<string>();
  for (let i = 0; i < 50; i++) {
    const s = svc(`s${i}`);
    a.allocate(s);
    const ip = specOf(s).clusterIP as string;
    assert.match(ip, /^10\.96\.\d+\.\d+$/);
    const [, , third, fourth] = ip.split('.').map(Number);
    assert.ok(third! * 256 + fourth! > 256, `${ip} is in the band kept for explicit addresses`);
    assert.ok(!seen.has(ip));
    seen.add(ip);
    assert.deepEqual(
      [specOf(s).clusterIPs, specOf(s).ipFamilies, specOf(s).ipFamilyPolicy],
      [[ip], ['IPv4'], 'SingleStack'],
    );
  }
});

test('an explicit clusterIP is honoured when free and refused as upstream refuses it when taken or out of range', () => {
  const a = new ClusterIpAllocator();
  const first = svc('dns', { clusterIP: '10.96.0.10' });
  a.allocate(first);
  assert.equal(specOf(first).clusterIP, '10.96.0.10');
  assert.deepEqual(
    refusal(() => a.allocate(svc('other', { clusterIP: '10.96.0.10' }))),
    [
      [
        'spec.clusterIPs',
        'Invalid value: []string{"10.96.0.10"}: failed to allocate IP 10.96.0.10: provided IP is already allocated',
      ],
    ],
  );
  assert.deepEqual(
    refusal(() => a.allocate(svc('far', { clusterIP: '10.97.0.1' }))),
    [
      [
        'spec.clusterIPs',
        'Invalid value: []string{"10.97.0.1"}: failed to allocate IP 10.97.0.1: the provided IP (10.97.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/16',
      ],
    ],
  );
  assert.deepEqual(
    refusal(() => a.allocate(svc('net', { clusterIP: '10.96.0.0' })))[0]![1].includes('is not in the valid range'),
    true,
  );
  assert.deepEqual(
    refusal(() => a.allocate(svc('bcast', { clusterIP: '10.96.255.255' })))[0]![1].includes(
      'is not in the valid range',
    ),
    true,
  );
});

test("the first address is the kubernetes Service's: no one else gets it, explicitly or dynamically", () => {
  const a = new ClusterIpAllocator('10.0.0.0/29');
  assert.equal(a.kubernetesServiceIp, '10.0.0.1');
  assert.match(
    refusal(() => a.allocate(svc('web', { clusterIP: '10.0.0.1' })))[0]![1],
    /provided IP is already allocated/,
  );
  const k = svc('kubernetes', { clusterIP: '10.0.0.1' });
  a.allocate(k);
  assert.equal(specOf(k).clusterIP, '10.0.0.1');
  const got = new Set<string>();
  for (let i = 0; i < 5; i++) {
    const s = svc(`s${i}`);
    a.allocate(s);
    got.add(specOf(s).clusterIP as string);
  }
  assert.deepEqual([...got].sort(), ['10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5', '10.0.0.6']);
  assert.throws(
    () => a.allocate(svc('full')),
    (e: unknown) =>
      e instanceof ApiError &&
      e.code === 500 &&
      e.message === 'Internal error occurred: failed to allocate a serviceIP: range is full',
  );
});

test('headless and ExternalName Services get no address; headless without selector defaults to RequireDualStack as upstream', () => {
  const a = new ClusterIpAllocator();
  const headless = svc('h', { clusterIP: 'None', selector: undefined });
  a.allocate(headless);
  assert.deepEqual(
    [specOf(headless).clusterIPs, specOf(headless).ipFamilyPolicy, specOf(headless).ipFamilies],
    [['None'], 'RequireDualStack', ['IPv4', 'IPv6']],
  );
  const selected = svc('hs', { clusterIP: 'None' });
  a.allocate(selected);
  assert.deepEqual([specOf(selected).ipFamilyPolicy, specOf(selected).ipFamilies], ['SingleStack', ['IPv4']]);
  const ext = svc('x', { type: 'ExternalName', externalName: 'example.com', ports: [] });
  a.allocate(ext);
  assert.equal(specOf(ext).clusterIP, undefined);
  assert.deepEqual(
    refusal(() => a.allocate(svc('dual', { ipFamilyPolicy: 'RequireDualStack' }))),
    [
      [
        'spec.ipFamilyPolicy',
        'Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services',
      ],
    ],
  );
  assert.deepEqual(
    refusal(() => a.allocate(svc('v6', { ipFamilies: ['IPv6'] }))),
    [['spec.ipFamilies[0]', 'Invalid value: "IPv6": not configured on this cluster']],
  );
});

test('delete releases the address; a restart rebuilds the allocations from the stored Services', () => {
  const a = new ClusterIpAllocator();
  const s = svc('web', { clusterIP: '10.96.3.3' });
  a.allocate(s);
  a.release(s);
  const again = svc('web2', { clusterIP: '10.96.3.3' });
  a.allocate(again);
  const restarted = new ClusterIpAllocator();
  restarted.rebuild([again]);
  assert.ok(restarted.isAllocated('10.96.3.3'));
  assert.match(refusal(() => restarted.allocate(svc('web3', { clusterIP: '10.96.3.3' })))[0]![1], /already allocated/);
});

test('turning into ExternalName gives the address back; leaving it takes one', () => {
  const a = new ClusterIpAllocator();
  const old = svc('web', { clusterIP: '10.96.4.4' });
  a.allocate(old);
  const ext: KubeObject = { ...structuredClone(old), spec: { type: 'ExternalName', externalName: 'example.com' } };
  a.update(ext, old);
  assert.ok(!a.isAllocated('10.96.4.4'));
  const back = svc('web');
  a.update(back, ext);
  assert.match(specOf(back).clusterIP as string, /^10\.96\./);
});

test('a service CIDR that is not one is a configuration error', () => {
  for (const bad of ['10.96.0.0', 'nope/16', '10.96.0.0/31'])
    assert.throws(
      () => new ClusterIpAllocator(bad),
      (e: unknown) => isMeshError(e, 'AMESH_ERR_CONFIG'),
      bad,
    );
  assert.equal(new ClusterIpAllocator('fd00:10:96::/112').family, 'IPv6');
});
