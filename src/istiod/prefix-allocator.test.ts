import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAllocationPrefix, PrefixAllocator } from './prefix-allocator.js';

const pool = (text: string, family: 4 | 6 = 4): PrefixAllocator =>
  new PrefixAllocator(parseAllocationPrefix(text, family, 'PREFIX'));

test("allocation starts after the prefix's own address and walks up, in each family (Istio's defaults)", () => {
  const v4 = pool('240.240.0.0/16');
  assert.deepEqual([v4.allocateNext('ns/a'), v4.allocateNext('ns/b')], ['240.240.0.1', '240.240.0.2']);
  const v6 = pool('2001:2::/48', 6);
  assert.deepEqual([v6.allocateNext('ns/a'), v6.allocateNext('ns/b')], ['2001:2::1', '2001:2::2']);
});

test('addresses recorded as used (read back from status) are skipped; one owner per address', () => {
  const p = pool('240.240.0.0/16');
  assert.deepEqual(p.markUsed('240.240.0.1', 'ns/old'), { used: false, usedByOwner: false });
  assert.deepEqual(p.markUsed('240.240.0.1', 'ns/old'), { used: true, usedByOwner: true });
  assert.deepEqual(p.markUsed('240.240.0.1', 'ns/other'), { used: true, usedByOwner: false });
  assert.deepEqual(p.markUsed('10.0.0.1', 'ns/other'), { used: false, usedByOwner: false }, 'outside: not tracked');
  assert.deepEqual(p.markUsed('2001:2::1', 'ns/other'), { used: false, usedByOwner: false }, 'other family');
  assert.equal(p.contains('240.240.255.255'), true);
  assert.equal(p.contains('240.241.0.0'), false);
  assert.equal(p.allocateNext('ns/new'), '240.240.0.2');
});

test('allocation wraps once to the start of the prefix and fails when no address is free', () => {
  const p = pool('10.0.0.0/30');
  assert.deepEqual(
    ['a', 'b', 'c'].map((o) => p.allocateNext(`ns/${o}`)),
    ['10.0.0.1', '10.0.0.2', '10.0.0.3'],
  );
  assert.equal(p.allocateNext('ns/d'), undefined, 'exhausted');
  p.free('10.0.0.2', 'ns/b');
  assert.equal(p.allocateNext('ns/d'), '10.0.0.2', 'a freed address is taken again');
  p.free('10.0.0.3', 'ns/b');
  assert.equal(p.allocateNext('ns/e'), undefined, 'only its owner frees an address');
});

test('a freed address below where allocation stands is the next one handed out', () => {
  const p = pool('240.240.0.0/16');
  for (const o of ['a', 'b', 'c']) p.allocateNext(`ns/${o}`);
  p.free('240.240.0.1', 'ns/a');
  assert.equal(p.allocateNext('ns/d'), '240.240.0.1');
  assert.equal(p.allocateNext('ns/e'), '240.240.0.4');
});

test('prefixes are address/bits of the named family, with room after the address written', () => {
  assert.deepEqual(parseAllocationPrefix('240.240.2.0/24', 4, 'X'), {
    text: '240.240.2.0/24',
    address: 0xf0f00200n,
    bits: 24,
    width: 4,
  });
  for (const [text, family] of [
    ['240.240.0.0', 4],
    ['240.240.0.0/33', 4],
    ['2001:2::/48', 4],
    ['240.240.0.0/16', 6],
    ['example.com/16', 4],
    ['240.240.0.0/32', 4],
    ['240.240.255.255/16', 4],
  ] as const)
    assert.throws(
      () => parseAllocationPrefix(text, family, 'PILOT_IP_AUTOALLOCATE_IPV4_PREFIX'),
      { code: 'AMESH_ERR_CONFIG', message: /^PILOT_IP_AUTOALLOCATE_IPV4_PREFIX: / },
      text,
    );
});
