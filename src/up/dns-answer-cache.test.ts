import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Answer } from 'dns-packet';
import { RCODE, type DnsAnswer, type DnsQuery } from '../ztunnel/dns/dns-message.js';
import { DnsAnswerCache } from './dns-answer-cache.js';

const query = (name: string, type: 'A' | 'AAAA' = 'A', echoFlags = 0x0100): DnsQuery => ({
  id: 1,
  question: { name, type, class: 'IN' },
  echoFlags,
  edns: undefined,
});

const a = (name: string, ttl: number, ip: string): Answer => ({ type: 'A', name, ttl, data: ip });
const soa = (zone: string, ttl: number): Answer => ({
  type: 'SOA',
  name: zone,
  ttl,
  data: { mname: `ns.${zone}`, rname: `hostmaster.${zone}`, serial: 1, refresh: 1, retry: 1, expire: 1, minimum: ttl },
});
const answer = (answers: Answer[], rcode: DnsAnswer['rcode'] = RCODE.NOERROR, authorities?: Answer[]): DnsAnswer => ({
  rcode,
  authoritative: false,
  answers,
  ...(authorities !== undefined ? { authorities } : {}),
  additionals: [],
});
const ttls = (x: DnsAnswer): number[] =>
  [...x.answers, ...(x.authorities ?? [])].map((r) => ('ttl' in r ? (r.ttl ?? -1) : -1));

test("every response's TTLs become its lowest TTL, at most 30 s and at least 5 s", () => {
  const c = new DnsAnswerCache('cluster.local', () => 0);
  assert.deepEqual(
    ttls(c.put(query('a.example'), answer([a('a.example', 300, '192.0.2.1'), a('a.example', 60, '192.0.2.2')]))),
    [30, 30],
  );
  assert.deepEqual(
    ttls(c.put(query('b.example'), answer([a('b.example', 12, '192.0.2.1'), a('b.example', 300, '192.0.2.2')]))),
    [12, 12],
  );
  assert.deepEqual(ttls(c.put(query('c.example'), answer([a('c.example', 0, '192.0.2.1')]))), [5]);
  // the cluster's records too, though they are not kept: dns-version's 28800 is served as 30
  const txt: Answer = { type: 'TXT', name: 'dns-version.cluster.local', ttl: 28800, data: '1.1.0' };
  assert.deepEqual(ttls(c.put(query('dns-version.cluster.local'), answer([txt]))), [30]);
});

test('a kept answer comes back authoritative with its TTLs counted down, until they run out', () => {
  let now = 1_000_000;
  const c = new DnsAnswerCache('cluster.local', () => now);
  c.put(query('a.example'), answer([a('a.example', 20, '192.0.2.1')]));
  now += 7_500;
  const hit = c.get(query('A.Example'));
  assert.deepEqual(hit, { ...answer([a('a.example', 13, '192.0.2.1')]), authoritative: true });
  assert.equal(c.get(query('a.example', 'AAAA')), undefined, 'another type is another entry');
  assert.equal(c.get(query('a.example', 'A', 0x0110)), undefined, 'CD set is another entry');
  now += 12_500;
  assert.equal(c.get(query('a.example')), undefined);
});

test('denials are kept only with an SOA; failures and the cluster domain never', () => {
  const c = new DnsAnswerCache('cluster.local', () => 0);
  c.put(query('gone.example'), answer([], RCODE.NXDOMAIN, [soa('example', 3600)]));
  assert.deepEqual(ttls(c.get(query('gone.example'))!), [30]);
  c.put(query('nosoa.example'), answer([], RCODE.NXDOMAIN));
  assert.equal(c.get(query('nosoa.example')), undefined);
  c.put(query('empty.example', 'AAAA'), answer([], RCODE.NOERROR, [soa('example', 10)]));
  assert.deepEqual(ttls(c.get(query('empty.example', 'AAAA'))!), [10]);
  c.put(query('broken.example'), answer([], RCODE.SERVFAIL));
  assert.equal(c.get(query('broken.example')), undefined);
  c.put(query('web.shop.svc.cluster.local'), answer([a('web.shop.svc.cluster.local', 30, '10.96.0.5')]));
  assert.equal(c.get(query('web.shop.svc.cluster.local')), undefined);
  c.put(query('cluster.local'), answer([], RCODE.NOERROR, [soa('cluster.local', 30)]));
  assert.equal(c.get(query('cluster.local')), undefined);
});
