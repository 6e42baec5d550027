import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Answer } from 'dns-packet';
import { RCODE, type DnsAnswer } from '../ztunnel/dns/dns-message.js';
import { roundRobin } from './dns-round-robin.js';

const a = (ip: string): Answer => ({ type: 'A', name: 'db.shop.svc.cluster.local', ttl: 30, data: ip });
const response = (answers: Answer[], rcode: DnsAnswer['rcode'] = RCODE.NOERROR): DnsAnswer => ({
  rcode,
  authoritative: true,
  answers,
  additionals: [],
});
/** Always swaps with the last record: a deterministic stand-in for the random pick. */
const last = (n: number): number => n - 1;

test('the addresses of a NOERROR answer are shuffled, every one kept', () => {
  const ips = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4'];
  const out = roundRobin(response(ips.map(a)), last);
  assert.deepEqual(
    out.answers.map((r) => ('data' in r ? r.data : '')),
    ['10.0.0.4', '10.0.0.1', '10.0.0.2', '10.0.0.3'],
  );
  assert.deepEqual(
    roundRobin(response(ips.map(a)), () => 0),
    response(ips.map(a)),
  );
});

test('a mixed section keeps CNAMEs first, then other records, then the shuffled addresses', () => {
  const cname: Answer = {
    type: 'CNAME',
    name: 'ext.shop.svc.cluster.local',
    ttl: 30,
    data: 'db.shop.svc.cluster.local',
  };
  const txt: Answer = { type: 'TXT', name: 'x', ttl: 30, data: 'y' };
  const out = roundRobin(response([a('10.0.0.1'), txt, a('10.0.0.2'), cname]), last);
  assert.deepEqual(
    out.answers.map((r) => r.type + ('data' in r && typeof r.data === 'string' ? ` ${r.data}` : '')),
    ['CNAME db.shop.svc.cluster.local', 'TXT y', 'A 10.0.0.2', 'A 10.0.0.1'],
  );
});

test('an error response is left as it is', () => {
  const nx = response([a('10.0.0.1'), a('10.0.0.2')], RCODE.NXDOMAIN);
  assert.equal(roundRobin(nx, last), nx);
});
