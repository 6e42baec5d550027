import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifests, type ResourceOf } from '../registry/manifest-dir.js';
import { autoAllocatedAddresses, shouldAutoAllocateIp, takesAutoAllocatedAddress } from './ip-autoallocation.js';

function serviceEntry(yaml: string): ResourceOf<'ServiceEntry'> {
  const { objects, errors } = parseManifests(
    'se.yaml',
    `apiVersion: networking.istio.io/v1\nkind: ServiceEntry\n${yaml}`,
  );
  assert.deepEqual(errors, []);
  const se = objects[0];
  assert.ok(se?.kind === 'ServiceEntry');
  return se as ResourceOf<'ServiceEntry'>;
}

test('which ServiceEntries get allocated addresses: not NONE or unset, no spec.addresses, not labelled false (any case), feature on', () => {
  const se = (spec: string, labels = '{}'): ResourceOf<'ServiceEntry'> =>
    serviceEntry(`metadata: {name: s, namespace: ns, labels: ${labels}}\nspec: ${spec}`);
  const dns = '{hosts: [a.example.com], resolution: DNS}';
  assert.equal(shouldAutoAllocateIp(se(dns), true), true);
  assert.equal(shouldAutoAllocateIp(se(dns), false), false);
  assert.equal(shouldAutoAllocateIp(se('{hosts: [a.example.com], resolution: STATIC}'), true), true);
  assert.equal(shouldAutoAllocateIp(se('{hosts: [a.example.com], resolution: NONE}'), true), false);
  assert.equal(shouldAutoAllocateIp(se('{hosts: [a.example.com]}'), true), false);
  assert.equal(
    shouldAutoAllocateIp(se('{hosts: [a.example.com], resolution: DNS, addresses: [10.0.0.0/24]}'), true),
    false,
  );
  assert.equal(shouldAutoAllocateIp(se(dns, '{networking.istio.io/enable-autoallocate-ip: "FALSE"}'), true), false);
  assert.equal(shouldAutoAllocateIp(se(dns, '{networking.istio.io/enable-autoallocate-ip: "no"}'), true), true);
});

test('a wildcard host takes an allocated address only under DYNAMIC_DNS', () => {
  const dns = serviceEntry('metadata: {name: s, namespace: ns}\nspec: {hosts: ["*.a.com", b.com], resolution: DNS}');
  assert.equal(takesAutoAllocatedAddress(dns, '*.a.com'), false);
  assert.equal(takesAutoAllocatedAddress(dns, 'b.com'), true);
  const dyn = serviceEntry('metadata: {name: s, namespace: ns}\nspec: {hosts: ["*.a.com"], resolution: DYNAMIC_DNS}');
  assert.equal(takesAutoAllocatedAddress(dyn, '*.a.com'), true);
});

test('status.addresses by host, in the order written and in canonical form; values that are not IPs skipped', () => {
  const se = serviceEntry(`metadata: {name: s, namespace: ns}
spec: {hosts: [a.com, b.com], resolution: DNS}
status:
  addresses:
  - {value: "2001:2:0::1", host: a.com}
  - {value: 240.240.0.1, host: a.com}
  - {value: 240.240.0.256, host: b.com}
  - {value: 240.240.0.2, host: b.com}
  - {value: 240.240.0.3}`);
  assert.deepEqual(
    [...autoAllocatedAddresses(se)],
    [
      ['a.com', ['2001:2::1', '240.240.0.1']],
      ['b.com', ['240.240.0.2']],
      ['', ['240.240.0.3']],
    ],
  );
});
