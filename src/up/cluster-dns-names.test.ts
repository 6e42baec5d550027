import { test } from 'node:test';
import assert from 'node:assert/strict';
import { labelsOf } from '../ztunnel/dns/dns-name.js';
import { endpointHostname, parseClusterDnsRequest, podAddress, reverseAddress } from './cluster-dns-names.js';

const parse = (relative: string): ReturnType<typeof parseClusterDnsRequest> =>
  parseClusterDnsRequest(labelsOf(relative));

test('a name below the zone is read right to left: svc|pod, namespace, service, then an endpoint or port and protocol', () => {
  const none = { podOrSvc: '', namespace: '', service: '', endpoint: '', port: '', protocol: '' };
  assert.deepEqual(parseClusterDnsRequest([]), none);
  assert.deepEqual(parse('svc'), none);
  assert.deepEqual(parse('pod'), none);
  assert.deepEqual(parse('shop.svc'), { ...none, podOrSvc: 'svc', namespace: 'shop' });
  assert.deepEqual(parse('web.shop.svc'), { ...none, podOrSvc: 'svc', namespace: 'shop', service: 'web' });
  assert.deepEqual(parse('db-0.db.shop.svc'), {
    ...none,
    podOrSvc: 'svc',
    namespace: 'shop',
    service: 'db',
    endpoint: 'db-0',
  });
  const srv = { ...none, podOrSvc: 'svc', namespace: 'shop', service: 'web', port: 'http', protocol: 'tcp' };
  assert.deepEqual(parse('_http._tcp.web.shop.svc'), srv);
  // the underscores are optional, as the plugin strips them when there
  assert.deepEqual(parse('http.tcp.web.shop.svc'), srv);
  assert.equal(parse('web.shop.other'), undefined);
  assert.equal(parse('dns'), undefined);
  assert.equal(parse('a.b.c.web.shop.svc'), undefined);
});

test("an endpoint's name is its hostname, else its address with dashes (an IPv6 one never ending in a dash)", () => {
  assert.equal(endpointHostname('10.244.1.5', 'db-0'), 'db-0');
  assert.equal(endpointHostname('10.244.1.5', undefined), '10-244-1-5');
  assert.equal(endpointHostname('fd00::1', ''), 'fd00--1');
  assert.equal(endpointHostname('fd00:1::', undefined), 'fd00-1--0');
});

test('a pod name spells an IPv4 address with three dashes, else an IPv6 one; anything else is no address', () => {
  assert.equal(podAddress('10-244-1-5'), '10.244.1.5');
  assert.equal(podAddress('fd00--5'), 'fd00::5');
  assert.equal(podAddress('1-2-3-400'), undefined);
  assert.equal(podAddress('web-0'), undefined);
});

test('a reverse name is an address only when whole: four octets, or 32 nibbles', () => {
  assert.equal(reverseAddress(labelsOf('4.3.2.1.in-addr.arpa')), '1.2.3.4');
  assert.equal(reverseAddress(labelsOf('3.2.1.in-addr.arpa')), undefined);
  assert.equal(reverseAddress(labelsOf('in-addr.arpa')), undefined);
  const nibbles = '20010db8000000000000000000000001'.split('').reverse().join('.');
  assert.equal(reverseAddress(labelsOf(`${nibbles}.ip6.arpa`)), '2001:db8::1');
  assert.equal(reverseAddress(labelsOf(`0.${nibbles}.ip6.arpa`)), undefined);
  assert.equal(reverseAddress(labelsOf('1.0.0.127.example')), undefined);
});
